//go:build unix && !linux

package mcp

import "syscall"

// dieWithParent: only Linux has a parent-death signal; elsewhere a server
// whose parent died sees its stdin close and exits.
func dieWithParent(*syscall.SysProcAttr) {}
