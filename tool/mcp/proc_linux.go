//go:build linux

package mcp

import "syscall"

// dieWithParent has the kernel send the server SIGTERM when Talaria dies
// without shutting it down (kill -9, or a second Ctrl+C that exits at
// once): no server outlives the process that started it. (The signal
// follows the OS thread that started the server; Go only retires threads
// that a goroutine locked and abandoned, which this package never does.)
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGTERM }
