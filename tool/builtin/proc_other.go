//go:build !unix

package builtin

import (
	"fmt"
	"os"
	"os/exec"
)

// ownProcessGroup is a no-op where process groups are not available; only
// the shell itself is killed there.
func ownProcessGroup(*exec.Cmd) {}

// killProcessGroup kills the command's process.
func killProcessGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	if err := cmd.Process.Kill(); err != nil && err != os.ErrProcessDone {
		return err
	}
	return nil
}

// exitStatus describes how a failed command ended.
func exitStatus(ps *os.ProcessState) string {
	return fmt.Sprintf("exit code %d", ps.ExitCode())
}
