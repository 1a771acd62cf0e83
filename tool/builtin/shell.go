package builtin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/tool"
)

// pipeGrace is how long a finished or killed command's output pipes may
// stay open (held by background processes) before they are closed anyway.
const pipeGrace = 2 * time.Second

type shellArgs struct {
	Command        string `json:"command"`
	TimeoutSeconds int    `json:"timeout_seconds"`
}

// Shell returns the shell tool: run a command with Options.Shell -c in the
// workspace root, capturing stdout and stderr together.
func Shell(opt Options) tool.Tool {
	opt = opt.withDefaults()
	return newTool(opt, tool.Info{
		Name: "shell",
		Description: fmt.Sprintf("Run a shell command (%s -c) in the workspace root and return its combined "+
			"stdout and stderr and its exit code. Stdin is empty; do not run interactive programs. "+
			"Times out after %d seconds unless timeout_seconds says otherwise (at most %d); on timeout the command "+
			"and every process it started are killed.", opt.Shell, int(opt.ShellTimeout.Seconds()), int(MaxShellTimeout.Seconds())),
		Parameters: schema(fmt.Sprintf(`"command":{"type":"string","minLength":1,"description":"The command line to run."},`+
			`"timeout_seconds":{"type":"integer","minimum":1,"maximum":%d,"description":"Time limit for this command."}`,
			int(MaxShellTimeout.Seconds())), "command"),
	}, func(ctx context.Context, ws workspace, a shellArgs) tool.Result {
		return runShell(ctx, ws, opt, a)
	})
}

func runShell(ctx context.Context, ws workspace, opt Options, a shellArgs) tool.Result {
	if strings.TrimSpace(a.Command) == "" {
		return tool.Errorf("command is empty")
	}
	dir, err := ws.realRoot()
	if err != nil {
		return tool.Errorf("%v", err)
	}
	timeout := opt.ShellTimeout
	if a.TimeoutSeconds > 0 {
		timeout = time.Duration(a.TimeoutSeconds) * time.Second
	}
	timeout = min(timeout, MaxShellTimeout)
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	out := newHeadTail(opt.MaxOutput - noteReserve)
	cmd := exec.CommandContext(runCtx, opt.Shell, "-c", a.Command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), opt.Env...)
	cmd.Stdout, cmd.Stderr = out, out // one writer: exec shares one pipe, keeping the interleaving
	ownProcessGroup(cmd)
	cmd.Cancel = func() error { return killProcessGroup(cmd) }
	cmd.WaitDelay = pipeGrace
	if err := cmd.Start(); err != nil {
		return tool.Errorf("cannot start %s: %v", opt.Shell, err)
	}
	waitErr := cmd.Wait()
	if runCtx.Err() != nil {
		// The shell may have exited before the kill while its children
		// live on; the group outlives it, so kill the group again.
		_ = killProcessGroup(cmd)
	}

	text := out.String(opt.MaxOutput - noteReserve)
	if text == "" {
		text = "(no output)"
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	var ee *exec.ExitError
	switch {
	case waitErr == nil: // finished, even if ctx ended just afterwards
		return tool.Result{Content: text + "[exit code 0]"}
	case ctx.Err() != nil:
		return tool.Result{Content: text + "[interrupted: the command and every process it started were killed]", IsError: true}
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return tool.Result{Content: text + fmt.Sprintf("[timed out after %s: the command and every process it started were killed; "+
			"raise timeout_seconds (at most %d) or run long jobs in the background with output to a file]",
			timeout, int(MaxShellTimeout.Seconds())), IsError: true}
	case errors.Is(waitErr, exec.ErrWaitDelay):
		return tool.Result{Content: text + "[exit code 0; background processes still held the output open and were detached from it]"}
	case errors.As(waitErr, &ee):
		return tool.Result{Content: text + "[" + exitStatus(ee.ProcessState) + "]", IsError: true}
	default:
		return tool.Result{Content: text + fmt.Sprintf("[command failed: %v]", waitErr), IsError: true}
	}
}
