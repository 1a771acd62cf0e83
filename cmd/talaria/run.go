package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

var runHelp = cmdHelp{
	name:  "run",
	usage: `[flags] "prompt"`,
	about: `Runs one turn and prints the answer on stdout; progress goes to stderr.
A prompt of "-" is read from stdin. Tools that change things (write_file,
edit_file, shell) are refused unless --yes is given or the config sets
approvals: auto. Exit codes: talaria --help.`,
	examples: []string{
		`talaria run "list the Go packages here and what each does"`,
		`talaria run --yes "fix the failing test in ./store"`,
		`talaria run -c "now add a test for it"`,
		`git diff | talaria run --json - > result.json`,
		`talaria run --api openai --base-url http://127.0.0.1:8000/v1 --model my-model "..."`,
	},
}

// runOpts is `talaria run` as its flags and prompt say.
type runOpts struct {
	rf        routeFlags
	prompt    string
	sessionID string
	cont      bool
	quiet     bool
	jsonOut   bool
	wait      time.Duration
	server    string
	// handoff is what a cut-off last turn of a continued session gets:
	// continue (default: serve.handoff) or interrupt.
	handoff string
}

func (c *cli) runCmd(ctx context.Context, args []string) (code int) {
	var o runOpts
	printed := false // the turn result is on stdout
	defer func() {
		if o.jsonOut && !printed && code != exitOK {
			c.printJSONError(code)
		}
	}()
	if code, done := c.runFlags(args, &o); done {
		return code
	}
	if o.server != "" {
		return c.runRemote(ctx, o.server, o.prompt, o.sessionID, o.rf.model, o.cont, o.rf.yes, o.jsonOut, o.quiet)
	}
	ctx, stop := interruptible(ctx)
	defer stop()
	o.rf.quiet = o.quiet
	a, err := c.setup(ctx, &o.rf, refuseChanges{}, o.wait)
	if err != nil {
		return c.setupExit(err)
	}
	defer a.Close()
	if msg, ok := promptFits(a, o.prompt); !ok {
		return c.fail(exitContext, "%s", msg)
	}
	sid, err := c.pickSession(ctx, a, o.sessionID, o.cont)
	if err != nil {
		return c.pickExit(err)
	}
	return c.runTurns(ctx, a, sid, &o, &printed)
}

// runFlags parses run's flags and reads its prompt into o; done: exit
// with code.
func (c *cli) runFlags(args []string, o *runOpts) (code int, done bool) {
	fs := runHelp.flags()
	o.rf.register(fs)
	fs.BoolVar(&o.jsonOut, "json", false, "print the turn result as JSON on stdout (a failure before the turn: an error object)")
	fs.StringVar(&o.sessionID, "session", "", "continue the session with this id")
	fs.BoolVar(&o.cont, "continue", false, "continue the most recent session")
	fs.BoolVar(&o.cont, "c", false, "short for --continue")
	fs.BoolVar(&o.quiet, "quiet", false, "print no progress on stderr")
	fs.DurationVar(&o.wait, "wait", 5*time.Second, "how long to wait for a session busy with another turn")
	fs.StringVar(&o.server, "server", "", "run the turn on a `talaria serve` at this URL (token from TALARIA_TOKEN)")
	fs.StringVar(&o.handoff, "handoff", "", "a continued session's cut-off last turn: continue (default) or interrupt")
	if code, done := c.parseFlags(fs, runHelp, args); done {
		return code, true
	}
	if err := o.rf.check(fs); err != nil {
		return c.usageError(runHelp, "%v", err), true
	}
	if o.handoff != "" && o.handoff != "continue" && o.handoff != "interrupt" {
		return c.usageError(runHelp, "--handoff is continue or interrupt, not %q", o.handoff), true
	}
	resuming := o.sessionID != "" || o.cont
	if code, done := c.runPrompt(fs.Args(), o, resuming); done {
		return code, true
	}
	if o.sessionID != "" && o.cont {
		return c.fail(exitUsage, "--session and --continue cannot be used together"), true
	}
	if o.server != "" {
		if err := remoteFlags(fs, resuming); err != nil {
			return c.usageError(runHelp, "%v", err), true
		}
		if o.prompt == "" {
			return c.fail(exitUsage, `no prompt: talaria run --server URL "what to do"`), true
		}
	}
	return 0, false
}

// runPrompt reads the prompt (and piped stdin) into o.prompt. Without
// one, only a continued session may go on: its cut-off turn is finished.
func (c *cli) runPrompt(args []string, o *runOpts, resuming bool) (code int, done bool) {
	prompt := strings.TrimSpace(strings.Join(args, " "))
	if prompt == "-" {
		b, err := io.ReadAll(c.stdin)
		if err != nil {
			return c.fail(exitUsage, "reading the prompt from stdin: %v", err), true
		}
		prompt = strings.TrimSpace(string(b))
	}
	if prompt == "" && !resuming {
		return c.fail(exitUsage, `no prompt: talaria run "what to do" (or "-" to read it from stdin)`), true
	}
	if len(args) > 0 && prompt != "-" && pipedStdin(c.stdin) {
		// `git diff | talaria run "review this"`: piped input goes with
		// the prompt, as codex and Claude Code do.
		data, err := io.ReadAll(io.LimitReader(c.stdin, maxStdinAttach+1))
		if err != nil {
			return c.fail(exitUsage, "reading stdin: %v", err), true
		}
		if len(data) > maxStdinAttach {
			return c.fail(exitUsage, "stdin holds more than %d KiB, the most run attaches to a prompt; pipe less (head -c), or save it to a file in the workspace and name it in the prompt", maxStdinAttach/1024), true
		}
		if !utf8.Valid(data) {
			return c.fail(exitUsage, "stdin is not UTF-8 text, so it cannot go with the prompt; save it to a file in the workspace and name it in the prompt"), true
		}
		if text := strings.TrimRight(string(data), "\n"); strings.TrimSpace(text) != "" {
			prompt += "\n\n<stdin>\n" + text + "\n</stdin>"
		}
	}
	o.prompt = prompt
	return 0, false
}

// runOutput is run's --json result: the turn it ran, and the cut-off
// turn it decided first when the continued session had one.
type runOutput struct {
	turn.Result
	Resumed *agent.CutOffOutcome `json:"resumed,omitempty"`
}

// runTurns runs the continued session's cut-off last turn to its end (or
// marks it, handoff: interrupt), then the prompt's turn, if any.
func (c *cli) runTurns(ctx context.Context, a *app, sid string, o *runOpts, printed *bool) int {
	unattended := o.rf.yes || a.cfg.Approvals == "auto"
	var prog *progress
	var hooks turn.Hooks
	if !o.quiet {
		noteUnknownModels(c.stderr, a)
		var unwatch func()
		prog, unwatch = c.newProgress(a, nil)
		defer unwatch()
		hooks = prog.hooks()
	}
	var out runOutput
	if o.sessionID != "" || o.cont {
		co, err := a.agent.ResumeCutOff(ctx, sid, agent.CutOff{Interrupt: cmp.Or(o.handoff, a.cfg.Serve.Handoff) == "interrupt",
			Max: a.cfg.Serve.HandoffMax, Hooks: hooks, Unattended: unattended})
		if err != nil {
			return c.resumeExit(err)
		}
		out.Resumed = co
		if co != nil {
			if prog != nil {
				prog.finish()
			}
			c.sayCutOff(co, o.quiet)
			if o.prompt == "" || co.Result.Exit == turn.ExitInterrupted && co.Outcome == agent.CutOffContinued {
				// Nothing more to run, or Ctrl+C stopped the continued turn.
				out.Result = co.Result
				*printed = true
				return c.endRun(a, &out, o, nil)
			}
			if !o.jsonOut && co.Result.FinalText != "" {
				// Its answer was never shown: the process that ran it died.
				fmt.Fprintln(c.stdout, strings.TrimRight(co.Result.FinalText, "\n"))
			}
		} else if o.prompt == "" {
			return c.fail(exitUsage, `no prompt, and the session's last turn is not cut off: talaria run -c "what to do next"`)
		}
	}
	res, err := a.agent.RunTurn(ctx, sid, agent.Input{Text: o.prompt, Unattended: unattended, Hooks: hooks})
	if prog != nil {
		prog.finish()
	}
	out.Result = res
	*printed = true
	return c.endRun(a, &out, o, err)
}

// endRun prints the turn's result (the answer, or --json) and its
// failure and summary lines, and returns its exit code. err: no turn
// could start.
func (c *cli) endRun(a *app, out *runOutput, o *runOpts, err error) int {
	res := &out.Result
	if o.jsonOut {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(out)
	} else if res.FinalText != "" {
		fmt.Fprintln(c.stdout, strings.TrimRight(res.FinalText, "\n"))
	}
	if err != nil {
		// No turn could start: an unknown or ended session is a usage
		// mistake, anything else a store failure.
		if k := store.KindOf(err); k != store.KindNotFound && k != store.KindEnded {
			return c.fail(exitOther, "%s", store.Describe(err))
		}
		return c.fail(exitUsage, "%s", res.Explanation)
	}
	// A failure is said even with --quiet: an exit code alone explains
	// nothing.
	if !res.OK() && res.Explanation != "" {
		fmt.Fprintln(c.stderr, "talaria: "+c.failureLine(a, res))
	}
	if res.Truncated {
		fmt.Fprintln(c.stderr, truncatedLine)
	}
	if !o.quiet {
		fmt.Fprintln(c.stderr, summaryLine(res))
	}
	return exitCode(res)
}

// sayCutOff tells the user in one line what became of the session's
// cut-off turn. A continued one already said it moved (the Handoff
// status, which progress shows); this says how it ended.
func (c *cli) sayCutOff(co *agent.CutOffOutcome, quiet bool) {
	switch {
	case co.Outcome == agent.CutOffContinued && quiet:
		return
	case co.Outcome == agent.CutOffContinued:
		fmt.Fprintf(c.stderr, "talaria: the cut-off turn %s was continued: %s\n", co.TurnID, co.Result.Exit)
	default:
		fmt.Fprintf(c.stderr, "talaria: the session's last turn %s was cut off when its process stopped; %s\n", co.TurnID, co.Result.Explanation)
	}
}

// resumeExit is the exit for a cut-off turn that could not be decided.
func (c *cli) resumeExit(err error) int {
	var held *store.LeaseHeldError
	if errors.As(err, &held) {
		return c.fail(exitBusy, "the session is busy with another turn: %v", err)
	}
	if k := store.KindOf(err); k == store.KindNotFound || k == store.KindEnded {
		return c.fail(exitUsage, "%v", err)
	}
	return c.fail(exitOther, "continuing the session's cut-off turn: %s", store.Describe(err))
}

// maxStdinAttach is the most piped input `run` attaches to a prompt.
const maxStdinAttach = 256 << 10

// pipedStdin reports whether stdin carries piped or redirected input: a
// pipe or a file, not a terminal or /dev/null (character devices). Readers
// that are not files (tests, embedders) count as piped.
func pipedStdin(r io.Reader) bool {
	if r == nil {
		return false
	}
	f, ok := r.(*os.File)
	if !ok {
		return true
	}
	st, err := f.Stat()
	if err != nil {
		return false
	}
	m := st.Mode()
	return m&os.ModeNamedPipe != 0 || m.IsRegular()
}

// pickSession returns the session to run in: the given one, the most
// recent (--continue), or a new one.
func (c *cli) pickSession(ctx context.Context, a *app, id string, cont bool) (string, error) {
	if id != "" {
		return id, nil
	}
	if cont {
		return latestConversation(ctx, a.store)
	}
	s, err := a.agent.NewSession(ctx, agent.SessionOptions{})
	if err != nil {
		return "", err
	}
	return s.ID, nil
}

// refuseChanges is run's approver without --yes: it never prompts, and
// tells the model plainly why a tool that changes things did not run.
type refuseChanges struct{}

func (refuseChanges) Approve(_ context.Context, call llm.ToolCall, _ tool.Info) (bool, string) {
	return false, fmt.Sprintf("Refused: %s changes things, and `talaria run` only runs such tools with --yes (or approvals: auto in the config). Do not retry it; tell the user what you would run and why.", call.Name)
}

// interruptible returns a context cancelled by the first Ctrl+C, SIGTERM
// or SIGHUP (the terminal closed): the turn stops, its running commands'
// process groups are killed and the session is finalized. A second signal
// exits at once with code 130.
func interruptible(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-sig:
				n++
				if n == 1 {
					cancel()
					continue
				}
				os.Exit(exitInterrupted)
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sig)
		close(done)
		cancel()
	}
}
