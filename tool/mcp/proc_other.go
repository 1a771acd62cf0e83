//go:build !unix

package mcp

import (
	"os"
	"os/exec"
	"syscall"
)

func ownGroup(*exec.Cmd) {}

// signalGroup has no process groups to use here: it kills the process.
func signalGroup(pid int, _ syscall.Signal) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

const (
	sigTerm = syscall.Signal(15)
	sigKill = syscall.Signal(9)
)
