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
	"syscall"
	"time"

	"github.com/talaria-agent/talaria/agent"
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
		"talaria chat --session 20260801-101500-a1b2c3d4e5",
		"talaria chat --provider anthropic --model claude-sonnet-4-5",
	},
}

func (c *cli) chatCmd(ctx context.Context, args []string) int {
	fs := chatCmdHelp.flags()
	var rf routeFlags
	rf.register(fs)
	sessionID := fs.String("session", "", "continue the session with this id")
	var cont bool
	fs.BoolVar(&cont, "continue", false, "continue the most recent session")
	fs.BoolVar(&cont, "c", false, "short for --continue")
	server := fs.String("server", "", "chat with a `talaria serve` at this URL (token from TALARIA_TOKEN)")
	if code, done := c.parseFlags(fs, chatCmdHelp, args); done {
		return code
	}
	if fs.NArg() > 0 {
		return c.usageError(chatCmdHelp, "takes no arguments (got %q); type your message once chat starts, or use talaria run \"…\" for one turn", fs.Arg(0))
	}
	if err := rf.check(fs); err != nil {
		return c.usageError(chatCmdHelp, "%v", err)
	}
	if *server != "" {
		if err := remoteFlags(fs, *sessionID != "" || cont); err != nil {
			return c.usageError(chatCmdHelp, "%v", err)
		}
		return c.chatRemote(ctx, *server, *sessionID, rf.model, cont)
	}
	lines := readLines(c.stdin)
	ap := &askApprover{lines: lines, out: c.stdout, always: map[string]bool{}}

	a, err := c.setup(ctx, &rf, ap, 5*time.Second)
	if err != nil {
		return c.setupExit(err)
	}
	defer a.Close()
	// A new chat's session is created with its first message, so opening
	// and leaving chat leaves no empty session for `run -c` to pick.
	sid := ""
	if *sessionID != "" || cont {
		if sid, err = c.pickSession(ctx, a, *sessionID, cont); err != nil {
			return c.pickExit(err)
		}
	}

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
	for {
		line, ok := prompt.next()
		if !ok {
			return exitOK
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
		if code, quit := c.chatTurn(ctx, a, sid, line, sig, &prompt.lastSig); quit {
			return code
		}
		sid = c.followTip(ctx, a, sid) // the turn may have rotated the session
	}
}

// chatTurn runs one turn, streaming it. The first Ctrl+C stops the turn;
// a second one quits, whether it comes while the turn winds down or soon
// after at the prompt (the stop is recorded in lastSig for that).
func (c *cli) chatTurn(ctx context.Context, a *app, sid, text string, sig <-chan os.Signal, lastSig *time.Time) (int, bool) {
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	prog, unwatch := c.newProgress(a, c.stdout)
	defer unwatch()
	done := make(chan turn.Result, 1)
	go func() {
		res, _ := a.agent.RunTurn(tctx, sid, agent.Input{Text: text, Hooks: prog.hooks()})
		done <- res
	}()
	stopping := false
	for {
		select {
		case res := <-done:
			prog.finish()
			if !res.OK() && res.Explanation != "" {
				fmt.Fprintln(c.stderr, "talaria: "+c.failureLine(a, &res))
			}
			if res.Truncated {
				fmt.Fprintln(c.stderr, truncatedLine)
			}
			fmt.Fprintln(c.stderr, summaryLine(&res))
			return exitOK, false
		case s := <-sig:
			if s != os.Interrupt {
				// The terminal is gone (or we are told to stop): stop the
				// turn, let it finalize, and quit.
				cancel()
				res := <-done
				fmt.Fprintln(c.stderr, summaryLine(&res))
				return exitInterrupted, true
			}
			if stopping {
				fmt.Fprintln(c.stderr, "\n· quitting")
				return exitInterrupted, true
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
}

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
	for {
		select {
		case <-ctx.Done():
			return false, "The turn was interrupted before the user answered."
		case l, ok := <-p.lines:
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
