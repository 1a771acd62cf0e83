package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/cmd/talaria/tui"
	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

const chatHelp = `Commands:
  /help       this help
  /usage      tokens and cost of this session
  /compact    compress this session's context now
  /session    show the session id
  /new        start a new session
  /exit       quit (also Ctrl+D, or Ctrl+C twice)
Ctrl+C while a turn runs stops that turn; everything shown so far is kept.
`

var chatCmdHelp = cmdHelp{
	name:  "chat",
	usage: "[flags]",
	about: `An interactive session with streamed answers. Tools that change things ask
first: yes / no / always (for that tool, this chat). Ctrl+C stops the running
turn, a second Ctrl+C quits; closing the terminal (SIGHUP) or SIGTERM stops
the turn and quits. In the chat:

` + chatHelp,
	examples: []string{
		"talaria chat",
		"talaria chat -c                     # continue the most recent session",
		"talaria chat -r                     # pick the session to continue from a list",
		"talaria chat --session 20260801-101500-a1b2c3d4e5",
		"talaria chat --provider anthropic --model claude-sonnet-4-5",
	},
}

// chatOpts are chat's flags.
type chatOpts struct {
	rf         routeFlags
	sessionID  string
	cont, pick bool // -c; -r without an id
	server     string
	plain      bool
	steerMode  string
}

func (c *cli) chatCmd(ctx context.Context, args []string) int {
	o, code, done := c.chatFlags(args)
	if done {
		return code
	}
	if o.server != "" {
		return c.chatRemote(ctx, o.server, o.sessionID, o.rf.model, o.cont)
	}
	if c.useTUI(o.plain) {
		return c.chatTUI(ctx, &o.rf, o.sessionID, o.cont, o.pick)
	}
	return c.chatLines(ctx, o)
}

// chatFlags parses chat's flags; done says to exit with code.
func (c *cli) chatFlags(args []string) (o *chatOpts, code int, done bool) {
	o = &chatOpts{}
	fs := chatCmdHelp.flags()
	o.rf.register(fs)
	fs.StringVar(&o.sessionID, "session", "", "continue the session with this id")
	fs.BoolVar(&o.cont, "continue", false, "continue the most recent session")
	fs.BoolVar(&o.cont, "c", false, "short for --continue")
	var resume bool
	fs.BoolVar(&resume, "resume", false, "pick a session to continue from a list (-r ID continues that one)")
	fs.BoolVar(&resume, "r", false, "short for --resume")
	fs.StringVar(&o.server, "server", "", "chat with a `talaria serve` at this URL (token from TALARIA_TOKEN)")
	fs.BoolVar(&o.plain, "plain", false, "the line mode even on a terminal (it is the mode for pipes, TERM=dumb and NO_COLOR)")
	fs.StringVar(&o.steerMode, "steer", "auto", "a line typed during a turn joins it after its tool round: `auto` (on a terminal), on or off")
	if code, done := c.parseFlags(fs, chatCmdHelp, args); done {
		return nil, code, true
	}
	if resume {
		// -r ID continues ID; -r alone lists the sessions to choose from.
		switch {
		case fs.NArg() == 1 && o.sessionID == "":
			o.sessionID = fs.Arg(0)
		case fs.NArg() == 0 && o.sessionID == "" && !o.cont:
			o.pick = true
		default:
			return nil, c.usageError(chatCmdHelp, "-r takes one session id at most, and not with --session or -c"), true
		}
	}
	if fs.NArg() > 0 && !resume {
		return nil, c.usageError(chatCmdHelp, "takes no arguments (got %q); type your message once chat starts, or use talaria run \"…\" for one turn", fs.Arg(0)), true
	}
	if err := o.rf.check(fs); err != nil {
		return nil, c.usageError(chatCmdHelp, "%v", err), true
	}
	if o.server != "" {
		if err := remoteFlags(fs, o.sessionID != "" || o.cont); err != nil {
			return nil, c.usageError(chatCmdHelp, "%v", err), true
		}
		if o.pick {
			return nil, c.usageError(chatCmdHelp, "-r without an id needs the local database; pass the session id with --server"), true
		}
	}
	return o, 0, false
}

// chatLines is chat in line mode: pipes, TERM=dumb, NO_COLOR, --plain.
func (c *cli) chatLines(ctx context.Context, o *chatOpts) int {
	var steering bool
	switch o.steerMode {
	case "auto":
		// Piped input is a script: its lines wait for their prompt.
		steering = isTerminal(c.stdin)
	case "on":
		steering = true
	case "off":
	default:
		return c.usageError(chatCmdHelp, "--steer %q: use auto, on or off", o.steerMode)
	}
	lines := readLines(c.stdin)
	if tw, ok := c.stdout.(*termWriter); ok && isTerminal(c.stdin) {
		// A terminal in line mode: pastes arrive marked (linein.go).
		fmt.Fprint(tw.w, bracketedPasteOn)
		defer fmt.Fprint(tw.w, bracketedPasteOff)
		lines = joinPastes(lines)
	}
	ap := &askApprover{lines: lines, out: c.stdout, always: map[string]bool{}}
	if steering {
		// During a turn chatTurn reads the lines: a line typed then steers
		// the turn, unless an approval question waits for it (ap.in).
		ap.in, ap.inEOF = make(chan string), make(chan struct{})
	}

	a, err := c.setup(ctx, &o.rf, ap, 5*time.Second)
	if err != nil {
		return c.setupExit(err)
	}
	defer a.Close()
	// A new chat's session is created with its first message, so opening
	// and leaving chat leaves no empty session for `run -c` to pick.
	sid := ""
	if o.sessionID != "" || o.cont {
		if sid, err = c.pickSession(ctx, a, o.sessionID, o.cont); err != nil {
			return c.pickExit(err)
		}
	}
	if o.pick {
		var ok bool
		if sid, ok = c.pickByNumber(ctx, a, lines); !ok {
			return exitOK
		}
	}
	return c.chatLoop(ctx, a, sid, lines, ap)
}

// chatLoop reads and runs the messages and commands of a line-mode chat.
func (c *cli) chatLoop(ctx context.Context, a *app, sid string, lines <-chan string, ap *askApprover) int {
	// Closing the terminal (SIGHUP) and SIGTERM stop a running turn like
	// Ctrl+C, then quit: nobody is left to type.
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sig)

	if sid == "" {
		fmt.Fprintf(c.stdout, "talaria chat — a new session starts with your first message (%s). /help for commands.\n", a.routes[0].Name())
	} else {
		fmt.Fprintf(c.stdout, "talaria chat — session %s (%s). /help for commands.\n", sid, a.routes[0].Name())
	}
	noteUnknownModels(c.stderr, a)
	prompt := &chatPrompt{out: c.stdout, lines: lines, sig: sig}
	var later []string // lines typed during a turn that did not join it
	for {
		var line string
		if len(later) > 0 {
			line, later = later[0], later[1:]
		} else {
			var ok bool
			if line, ok = prompt.next(); !ok {
				return exitOK
			}
		}
		if strings.HasPrefix(line, "/") {
			quit, next := c.slash(ctx, a, sid, line)
			if quit {
				return exitOK
			}
			sid = next
			continue
		}
		if msg, ok := promptFits(a, line); !ok {
			fmt.Fprintln(c.stderr, "talaria: "+msg)
			continue
		}
		if sid == "" {
			s, err := a.agent.NewSession(ctx, agent.SessionOptions{})
			if err != nil {
				return c.pickExit(err)
			}
			sid = s.ID
			fmt.Fprintf(c.stdout, "(session %s)\n", sid)
		}
		code, quit, left := c.chatTurn(ctx, a, sid, line, sig, &prompt.lastSig, ap)
		if quit {
			return code
		}
		later = append(later, left...)
		sid = c.followTip(ctx, a, sid) // the turn may have rotated the session
	}
}

// pickByNumber is -r in line mode: a numbered list of sessions (subagents
// indented under their parent), then a number read from the input; an
// empty line or the end of input starts a new session, as without -r.
func (c *cli) pickByNumber(ctx context.Context, a *app, lines <-chan string) (string, bool) {
	items, err := pickList(ctx, a)
	if err != nil {
		fmt.Fprintln(c.stderr, "talaria: "+err.Error())
		return "", true
	}
	rows := tui.SessionTree(items, "")
	if len(rows) == 0 {
		fmt.Fprintln(c.stdout, "no sessions yet: a new one starts with your first message")
		return "", true
	}
	now := time.Now()
	for i, r := range rows {
		title := r.Title
		if title == "" {
			title = "(no message yet)"
		}
		fmt.Fprintf(c.stdout, "%3d  %s%s  (%s, %s, %s)\n", i+1, strings.Repeat("  ", r.Depth), clip(title, 60), tui.Age(now, r.Updated), r.Model, r.ID)
	}
	for {
		fmt.Fprintf(c.stdout, "session number (1-%d, Enter for a new session): ", len(rows))
		l, ok := <-lines
		if !ok {
			return "", false
		}
		l = strings.TrimSpace(l)
		if l == "" {
			return "", true
		}
		var n int
		if _, err := fmt.Sscan(l, &n); err == nil && n >= 1 && n <= len(rows) && fmt.Sprint(n) == l {
			return rows[n-1].ID, true
		}
		fmt.Fprintf(c.stdout, "%q is not a number from the list\n", l)
	}
}

// chatTurn runs one turn, streaming it. The first Ctrl+C stops the turn;
// a second one quits, whether it comes while the turn winds down or soon
// after at the prompt (the stop is recorded in lastSig for that).
//
// A line typed while the turn runs steers it: it joins the turn after the
// tool round that is running (turn.Steering). Lines that did not join — one
// typed during the last call, a /command — are returned, to run next.
func (c *cli) chatTurn(ctx context.Context, a *app, sid, text string, sig <-chan os.Signal, lastSig *time.Time, ap *askApprover) (int, bool, []string) {
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	prog, unwatch := c.newProgress(a, c.stdout)
	defer unwatch()
	steer := turn.NewSteering()
	prog.steering = true
	hooks := prog.hooks()
	done := make(chan turn.Result, 1)
	go func() {
		res, _ := a.agent.RunTurn(tctx, sid, agent.Input{Text: text, Hooks: hooks, Steer: steer})
		done <- res
	}()
	var later []string
	// left is what the turn did not take, in the order it was typed.
	left := func() []string {
		var out []string
		for _, m := range steer.Close() {
			out = append(out, m.Text)
		}
		return append(out, later...)
	}
	var lines <-chan string
	if ap.in != nil {
		lines = ap.lines // steering on
	}
	stopping := false
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				lines = nil // input ended: the turn goes on
				ap.closeInput()
				continue
			}
			line := strings.TrimSpace(l)
			switch {
			case ap.asking.Load():
				// The approval question waits for this line.
				select {
				case ap.in <- l:
				case res := <-done:
					done <- res
					later = append(later, line)
				}
			case line == "":
			case strings.HasPrefix(line, "/"):
				later = append(later, line)
				prog.status(line + " runs when the turn ends")
			default:
				if !steer.Send(turn.SteerMessage{Text: line}) {
					later = append(later, line)
				}
			}
		case res := <-done:
			prog.finish()
			if !res.OK() && res.Explanation != "" {
				fmt.Fprintln(c.stderr, "talaria: "+c.failureLine(a, &res))
			}
			if res.Truncated {
				fmt.Fprintln(c.stderr, truncatedLine)
			}
			fmt.Fprintln(c.stderr, summaryLine(&res))
			return exitOK, false, left()
		case s := <-sig:
			if s != os.Interrupt {
				// The terminal is gone (or we are told to stop): stop the
				// turn, let it finalize, and quit.
				cancel()
				res := <-done
				fmt.Fprintln(c.stderr, summaryLine(&res))
				return exitInterrupted, true, nil
			}
			if stopping {
				fmt.Fprintln(c.stderr, "\n· quitting")
				return exitInterrupted, true, nil
			}
			stopping = true
			*lastSig = time.Now()
			fmt.Fprintln(c.stderr, "\n· stopping the turn (Ctrl+C again to quit)")
			cancel()
		}
	}
}

// slash runs a chat command; it returns whether to quit and the session to
// continue in ("" until the first message).
func (c *cli) slash(ctx context.Context, a *app, sid, line string) (bool, string) {
	cmd, _, _ := strings.Cut(line, " ")
	if sid == "" && (cmd == "/usage" || cmd == "/compact") {
		fmt.Fprintln(c.stdout, "nothing yet: the session starts with your first message")
		return false, sid
	}
	switch cmd {
	case "/exit", "/quit":
		return true, sid
	case "/help":
		fmt.Fprint(c.stdout, chatHelp)
	case "/session":
		if sid == "" {
			fmt.Fprintln(c.stdout, "no session yet: it starts with your first message")
			return false, sid
		}
		fmt.Fprintln(c.stdout, sid)
	case "/new":
		// The new session, too, is created with its first message.
		fmt.Fprintln(c.stdout, "new session: it starts with your next message")
		return false, ""
	case "/usage":
		s, err := a.store.GetSession(ctx, sid)
		if err != nil {
			fmt.Fprintln(c.stderr, "talaria: "+store.Describe(err))
			return false, sid
		}
		fmt.Fprintln(c.stdout, usageText(s, a))
		fmt.Fprintln(c.stdout, contextLine(ctx, a, s))
	case "/compact":
		out, err := a.agent.Compact(ctx, sid)
		if errors.Is(err, compact.ErrNothingToCompress) {
			fmt.Fprintln(c.stdout, "nothing to compress yet")
			return false, sid
		}
		if err != nil {
			fmt.Fprintln(c.stderr, "talaria: "+store.Describe(err))
			return false, sid
		}
		fmt.Fprintln(c.stdout, "compressed: "+compactLine(out))
		return false, out.SessionID
	default:
		fmt.Fprintf(c.stdout, "unknown command %s\n%s", cmd, chatHelp)
	}
	return false, sid
}

// readLines feeds stdin's lines to a channel, closed at EOF. Both the
// prompt and the approver read from it, never at the same time.
func readLines(r io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// memoryAddText is the text a memory "add" call would store.
func memoryAddText(call llm.ToolCall) (string, bool) {
	if call.Name != agent.MemoryToolName {
		return "", false
	}
	var args struct {
		Action string `json:"action"`
		Text   string `json:"text"`
	}
	if json.Unmarshal([]byte(call.Arguments), &args) != nil || args.Action != "add" {
		return "", false
	}
	return termSafe(args.Text), true
}

// askApprover asks in the terminal before a tool that changes things runs:
// yes, no, or always (for this tool, this chat).
type askApprover struct {
	mu     sync.Mutex
	lines  <-chan string
	out    io.Writer
	always map[string]bool
	// in, when set, is where answers come from while a turn runs: chat
	// reads the lines then (a line may steer the turn) and hands one over
	// while asking is set; inEOF is closed when the input ended.
	in      chan string
	inEOF   chan struct{}
	eofOnce sync.Once
	asking  atomic.Bool
}

// closeInput says the input ended to a question waiting on in.
func (p *askApprover) closeInput() { p.eofOnce.Do(func() { close(p.inEOF) }) }

func (p *askApprover) Approve(ctx context.Context, call llm.ToolCall, _ tool.Info) (bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.always[call.Name] {
		return true, ""
	}
	if text, ok := memoryAddText(call); ok {
		// What is stored reaches every later session's prompt: show all
		// of it, not a clipped argument line.
		fmt.Fprintf(p.out, "\nThe model wants to keep this in the workspace memory (every new session starts with it):\n%s\n", indent(text))
	}
	fmt.Fprintf(p.out, "\nAllow %s %s? [y]es / [n]o / [a]lways for %s in this session: ", call.Name, clip(compactArgs(call.Arguments), 200), call.Name)
	src, eof := p.lines, (<-chan struct{})(nil)
	if p.in != nil {
		src, eof = p.in, p.inEOF
		p.asking.Store(true)
		defer p.asking.Store(false)
	}
	for {
		select {
		case <-ctx.Done():
			return false, "The turn was interrupted before the user answered."
		case <-eof:
			return false, "The user did not approve (input closed)."
		case l, ok := <-src:
			if !ok {
				return false, "The user did not approve (input closed)."
			}
			switch strings.ToLower(strings.TrimSpace(l)) {
			case "y", "yes":
				return true, ""
			case "a", "always":
				p.always[call.Name] = true
				return true, ""
			case "n", "no":
				return false, "The user declined this call of " + call.Name + ". Do not retry it unchanged; ask the user or take another approach."
			}
			// Anything else is not a "no": a typo must not decide.
			fmt.Fprint(p.out, "Please answer y (yes), n (no) or a (always): ")
		}
	}
}
