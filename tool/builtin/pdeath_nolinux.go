//go:build unix && !linux

package builtin

import "syscall"

// dieWithParent: no parent-death signal outside Linux.
func dieWithParent(*syscall.SysProcAttr) {}
