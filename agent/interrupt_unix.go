//go:build unix

package agent

import "syscall"

func interruptProcess(pid int) error { return syscall.Kill(pid, syscall.SIGINT) }
