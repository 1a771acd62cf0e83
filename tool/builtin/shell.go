package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/tool/sandbox"
)

// pipeGrace is how long a finished or killed command's output pipes may
// stay open (held by background processes) before they are closed anyway.
const pipeGrace = 2 * time.Second

// maxProcs bounds the processes one shell command may have at once, where
// a pids cgroup can be made.
const maxProcs = 512

type shellArgs struct {
	Command        string `json:"command"`
	TimeoutSeconds int    `json:"timeout_seconds"`
}

// Shell returns the shell tool: run a command with Options.Shell -c in the
// workspace root, capturing stdout and stderr together.
func Shell(opt Options) tool.Tool {
	opt = opt.withDefaults()
	return &shellTool{Tool: newTool(opt, tool.Info{
		Name: "shell",
		Description: fmt.Sprintf("Run a shell command (%s -c) in the workspace root and return its combined "+
			"stdout and stderr and its exit code. Stdin is empty; do not run interactive programs. "+
			"Times out after %d seconds unless timeout_seconds says otherwise (at most %d); on timeout the command "+
			"and every process it started are killed.%s", opt.Shell, int(opt.ShellTimeout.Seconds()), int(MaxShellTimeout.Seconds()),
			sandboxNote(opt.Sandbox)),
		Parameters: schema(fmt.Sprintf(`"command":{"type":"string","minLength":1,"description":"The command line to run."},`+
			`"timeout_seconds":{"type":"integer","minimum":1,"maximum":%d,"description":"Time limit for this command."}`,
			int(MaxShellTimeout.Seconds())), "command"),
	}, func(ctx context.Context, ws workspace, a shellArgs) tool.Result {
		return runShell(ctx, ws, opt, a)
	}), sandbox: opt.Sandbox}
}

// shellTool is the shell tool; in a confining sandbox, the calls that only
// read (sandbox.ReadOnlyCommand) run without asking for approval.
type shellTool struct {
	tool.Tool
	sandbox *sandbox.Policy
}

// ReadOnlyCall reports a command that only reads, run where the kernel
// confines it: parsed, never matched as a prefix.
func (t *shellTool) ReadOnlyCall(args json.RawMessage) bool {
	if t.sandbox == nil || t.sandbox.Mode == sandbox.Off || !t.sandbox.Mechanism.Enforced() {
		return false
	}
	var a shellArgs
	if json.Unmarshal(args, &a) != nil {
		return false
	}
	return sandbox.ReadOnlyCommand(a.Command)
}

// sandboxNote tells the model what the sandbox allows.
func sandboxNote(p *sandbox.Policy) string {
	switch {
	case p == nil || p.Mode == sandbox.Off:
		return ""
	case p.Mode == sandbox.ReadOnly:
		return " Commands run in a read-only sandbox: they can read the workspace but write nothing and reach no network."
	case p.Network:
		return " Commands run in a sandbox: they may write only in the workspace and a private /tmp."
	case len(p.Hosts) > 0:
		return " Commands run in a sandbox: they may write only in the workspace and a private /tmp, and reach only " +
			"these hosts, through the HTTP proxy set in http_proxy/https_proxy: " + strings.Join(p.Hosts, ", ") + "."
	}
	return " Commands run in a sandbox: they may write only in the workspace and a private /tmp, and have no network."
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
	argv := []string{opt.Shell, "-c", a.Command}
	confined := opt.Sandbox != nil && opt.Sandbox.Mode != sandbox.Off
	if opt.Sandbox != nil {
		if argv, err = opt.Sandbox.Command(dir, argv); err != nil {
			return tool.Errorf("refused by the sandbox: %v", err)
		}
	}
	// A pids cgroup, where one can be made, bounds the processes (a fork
	// bomb stops at maxProcs) and finds them all to kill when the call
	// ends, setsid'd ones included, in every mode.
	group, grouped := sandbox.NewGroup(maxProcs)
	var lifeline *os.File
	if grouped {
		argv = group.Wrap(argv)
		defer func() { _ = group.Remove() }()
		r, w, err := os.Pipe()
		if err != nil {
			return tool.Errorf("cannot start %s: %v", argv[0], err)
		}
		defer r.Close()
		defer w.Close()
		lifeline = r
		_ = w // held open (close-on-exec) until the call is over or Talaria dies
	}
	cmd := exec.CommandContext(runCtx, argv[0], argv[1:]...)
	if lifeline != nil {
		cmd.ExtraFiles = []*os.File{lifeline} // fd 3
	}
	cmd.Dir = dir
	cmd.Env = append(sandbox.Env(os.Environ(), opt.EnvNames, confined), opt.Env...)
	cmd.Stdout, cmd.Stderr = out, out // one writer: exec shares one pipe, keeping the interleaving
	ownProcessGroup(cmd)
	var killed []string
	cmd.Cancel = func() error {
		killed = processTree(cmd)
		err := killProcessGroup(cmd)
		if grouped {
			group.Kill()
		}
		return err
	}
	cmd.WaitDelay = pipeGrace
	if err := cmd.Start(); err != nil {
		return tool.Errorf("cannot start %s: %v", argv[0], err)
	}
	waitErr := cmd.Wait()
	if runCtx.Err() != nil {
		// The shell may have exited before the kill while its children
		// live on; the group outlives it, so kill the group again.
		_ = killProcessGroup(cmd)
	}
	what := "the command and every process it started were killed"
	if len(killed) > 0 {
		what = "killed " + strings.Join(killed, ", ")
		if confined {
			what += " (and so every process in its sandbox)"
		}
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
		return tool.Result{Content: text + "[interrupted: " + what + "]", IsError: true}
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return tool.Result{Content: text + fmt.Sprintf("[timed out after %s: "+what+"; "+
			"raise timeout_seconds (at most %d) or run long jobs in the background with output to a file]",
			timeout, int(MaxShellTimeout.Seconds())), IsError: true}
	case errors.Is(waitErr, exec.ErrWaitDelay):
		return tool.Result{Content: text + "[exit code 0; background processes still held the output open and were detached from it]"}
	case errors.As(waitErr, &ee):
		return tool.Result{Content: text + "[" + exitStatus(ee.ProcessState) + "]" + deniedNote(opt.Sandbox, text), IsError: true}
	default:
		return tool.Result{Content: text + fmt.Sprintf("[command failed: %v]", waitErr), IsError: true}
	}
}

// deniedNote says, after a failed confined command whose output shows an
// error the sandbox causes, that the sandbox denied it: the model can then
// ask for what it needs or stop, instead of retrying a confusing I/O error.
func deniedNote(p *sandbox.Policy, output string) string {
	if p == nil || p.Mode == sandbox.Off {
		return ""
	}
	if d := sandbox.Denial(output); d != "" {
		return fmt.Sprintf("\n[denied by the sandbox (mode %s): %s. Do not work around it; "+
			"tell the user what you need]", p.Mode, d)
	}
	return ""
}
