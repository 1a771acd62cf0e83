//go:build unix

package builtin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// ownProcessGroup starts the command in a new session, which is also a new
// process group: killing the group reaches every process the command
// started. A new session also detaches it from the controlling terminal, so
// a command that wants a password (git, ssh, sudo) fails at once instead of
// stealing the terminal from an interactive talaria or hanging until timeout.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	dieWithParent(cmd.SysProcAttr)
}

// killProcessGroup kills the command's whole process group.
func killProcessGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	// With Setsid the group id is the shell's pid.
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// exitStatus describes how a failed command ended.
func exitStatus(ps *os.ProcessState) string {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("terminated by signal %d (%s)", ws.Signal(), ws.Signal())
	}
	return fmt.Sprintf("exit code %d", ps.ExitCode())
}
