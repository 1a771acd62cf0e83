//go:build linux

package builtin

import "syscall"

// dieWithParent has the kernel kill the command when Talaria dies (kill -9
// included), so no command outlives it; in a sandbox, bwrap's own
// --die-with-parent then ends every process in the command's namespace.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
