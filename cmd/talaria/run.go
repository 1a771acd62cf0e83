package main

import (
	"context"
	"encoding/json"
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

func (c *cli) runCmd(ctx context.Context, args []string) (code int) {
	fs := runHelp.flags()
	var rf routeFlags
	rf.register(fs)
	jsonOut := fs.Bool("json", false, "print the turn result as JSON on stdout (a failure before the turn: an error object)")
	printed := false // the turn result is on stdout
	defer func() {
		if *jsonOut && !printed && code != exitOK {
			c.printJSONError(code)
		}
	}()
	sessionID := fs.String("session", "", "continue the session with this id")
	var cont bool
	fs.BoolVar(&cont, "continue", false, "continue the most recent session")
	fs.BoolVar(&cont, "c", false, "short for --continue")
	quiet := fs.Bool("quiet", false, "print no progress on stderr")
	wait := fs.Duration("wait", 5*time.Second, "how long to wait for a session busy with another turn")
	server := fs.String("server", "", "run the turn on a `talaria serve` at this URL (token from TALARIA_TOKEN)")
	if code, done := c.parseFlags(fs, runHelp, args); done {
		return code
	}
	if err := rf.check(fs); err != nil {
		return c.usageError(runHelp, "%v", err)
	}
	prompt := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if prompt == "-" {
		b, err := io.ReadAll(c.stdin)
		if err != nil {
			return c.fail(exitUsage, "reading the prompt from stdin: %v", err)
		}
		prompt = strings.TrimSpace(string(b))
	}
	if prompt == "" {
		return c.fail(exitUsage, `no prompt: talaria run "what to do" (or "-" to read it from stdin)`)
	}
	if fs.NArg() > 0 && prompt != "-" && pipedStdin(c.stdin) {
		// `git diff | talaria run "review this"`: piped input goes with
		// the prompt, as codex and Claude Code do.
		data, err := io.ReadAll(io.LimitReader(c.stdin, maxStdinAttach+1))
		if err != nil {
			return c.fail(exitUsage, "reading stdin: %v", err)
		}
		if len(data) > maxStdinAttach {
			return c.fail(exitUsage, "stdin holds more than %d KiB, the most run attaches to a prompt; pipe less (head -c), or save it to a file in the workspace and name it in the prompt", maxStdinAttach/1024)
		}
		if !utf8.Valid(data) {
			return c.fail(exitUsage, "stdin is not UTF-8 text, so it cannot go with the prompt; save it to a file in the workspace and name it in the prompt")
		}
		if text := strings.TrimRight(string(data), "\n"); strings.TrimSpace(text) != "" {
			prompt += "\n\n<stdin>\n" + text + "\n</stdin>"
		}
	}
	if *sessionID != "" && cont {
		return c.fail(exitUsage, "--session and --continue cannot be used together")
	}

	if *server != "" {
		if err := remoteFlags(fs, *sessionID != "" || cont); err != nil {
			return c.usageError(runHelp, "%v", err)
		}
		return c.runRemote(ctx, *server, prompt, *sessionID, rf.model, cont, rf.yes, *jsonOut, *quiet)
	}
	ctx, stop := interruptible(ctx)
	defer stop()
	rf.quiet = *quiet
	a, err := c.setup(ctx, &rf, refuseChanges{}, *wait)
	if err != nil {
		return c.setupExit(err)
	}
	defer a.Close()

	if msg, ok := promptFits(a, prompt); !ok {
		return c.fail(exitContext, "%s", msg)
	}
	sid, err := c.pickSession(ctx, a, *sessionID, cont)
	if err != nil {
		return c.pickExit(err)
	}
	in := agent.Input{Text: prompt, Unattended: rf.yes || a.cfg.Approvals == "auto"}
	var prog *progress
	if !*quiet {
		noteUnknownModels(c.stderr, a)
		var unwatch func()
		prog, unwatch = c.newProgress(a, nil)
		defer unwatch()
		in.Hooks = prog.hooks()
	}
	res, err := a.agent.RunTurn(ctx, sid, in)
	if prog != nil {
		prog.finish()
	}
	if *jsonOut {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
		printed = true
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
		fmt.Fprintln(c.stderr, "talaria: "+c.failureLine(a, &res))
	}
	if res.Truncated {
		fmt.Fprintln(c.stderr, truncatedLine)
	}
	if !*quiet {
		fmt.Fprintln(c.stderr, summaryLine(&res))
	}
	return exitCode(&res)
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
