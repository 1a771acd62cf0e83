//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// ownGroup starts the server in a process group of its own: Ctrl+C at the
// terminal then reaches Talaria only (which cancels calls and shuts servers
// down in order), and killing the group also ends helpers the server
// started (npx starts node, uvx starts python).
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
}

// signalGroup sends sig to the process group led by pid.
func signalGroup(pid int, sig syscall.Signal) {
	if pid > 0 {
		_ = syscall.Kill(-pid, sig)
	}
}

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)
