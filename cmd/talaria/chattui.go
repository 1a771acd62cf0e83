package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/talaria-agent/talaria/agent"
	root "github.com/talaria-agent/talaria/app"
	"github.com/talaria-agent/talaria/cmd/talaria/tui"
	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/internal/config"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/transcript"
	"github.com/talaria-agent/talaria/turn"
)

// useTUI says whether chat runs the terminal UI: both ends a terminal, a
// terminal that can draw one, and no --plain. Everything else keeps the
// line mode, which scripts rely on.
func (c *cli) useTUI(plain bool) bool {
	if plain || c.getenv("TERM") == "dumb" || c.getenv("NO_COLOR") != "" {
		return false
	}
	_, outTTY := c.stdout.(*termWriter)
	return outTTY && isTerminal(c.stdin)
}

// syncBuffer collects what the rest of the CLI writes while the UI owns
// the terminal; the UI prints it above itself.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.b.String()
	s.b.Reset()
	return termSafe(out)
}

// chatTUI is chat on a terminal: tui drives, this file runs turns and
// commands for it.
func (c *cli) chatTUI(ctx context.Context, rf *routeFlags, sessionID string, cont, pick bool) int {
	term := c.stdout.(*termWriter)
	out := term.w
	origErr, origRaw := c.stderr, c.rawStderr
	// Closing the terminal or SIGTERM stops the turn and quits; Ctrl+C is
	// a key in the UI, not a signal.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGHUP)
	defer stop() // the UI writes its own escape sequences; text is filtered below
	// Lines the rest of the CLI prints (setup notes, command output)
	// would tear the screen: they are collected and printed by the UI.
	buf := &syncBuffer{}
	c.stdout, c.stderr, c.rawStderr = buf, buf, buf

	home, _ := config.Home(c.getenv)
	ap := &tuiApprover{}
	var (
		a   *app
		sid string
	)
	s := &chatState{c: c, rf: rf, ap: ap}
	opts := tui.Options{
		Out:      out,
		Env:      os.Environ(),
		Banner:   "talaria chat — /help for commands, Esc or Ctrl+C stops a turn, Ctrl+C twice quits",
		Commands: tuiCommands,
	}
	if home != "" {
		opts.HistoryFile = filepath.Join(home, "chat_history")
	}
	if in, ok := c.stdin.(*os.File); ok {
		opts.In = in
	}
	if ws, _, err := workspaceDir(rf.workspace); err == nil {
		opts.Workspace = ws // where @path completion looks
	}
	var ui *tui.UI
	opts.Start = func(ctx context.Context) (tui.Info, error) {
		var err error
		if a, err = c.setup(ctx, rf, ap, 5*time.Second); err != nil {
			return tui.Info{}, err
		}
		ap.ws = a.agent.Workspace()
		if sessionID != "" || cont {
			if sid, err = c.pickSession(ctx, a, sessionID, cont); err != nil {
				return tui.Info{}, &pickError{err}
			}
		}
		noteUnknownModels(buf, a)
		notes := strings.TrimSpace(buf.take())
		if a.built != nil && a.built.Sandbox != nil {
			ap.sandbox = root.SandboxLine(a.built.Sandbox) // shown with a shell command's approval
		}
		s.a, s.sid = a, sid
		s.first = modelChoice{a.routes[0].Provider.Name(), a.routes[0].Model}
		info := s.info(ctx)
		if notes != "" {
			for _, l := range strings.Split(notes, "\n") {
				ui.Status(strings.TrimPrefix(l, "· ")) // Status marks its lines
			}
		}
		return info, nil
	}
	opts.Turn = func(ctx context.Context, text string) tui.TurnEnd { return s.turn(ctx, ui, text) }
	opts.Command = func(ctx context.Context, line string) tui.CommandResult { return s.command(ctx, line) }
	opts.Steer = s.steerTurn
	opts.ListSessions = func(ctx context.Context) ([]tui.SessionItem, error) { return pickList(ctx, s.a) }
	opts.PickAtStart = pick
	ui = tui.New(opts)
	ap.ui = ui
	err := ui.Run(ctx)
	if s.a != nil {
		defer s.a.Close() // /model may have replaced the app Start made
	}
	// What was said after the UI's last frame (a setup error) goes to the
	// terminal as in line mode.
	c.stdout, c.stderr, c.rawStderr = term, origErr, origRaw
	if rest := buf.take(); rest != "" {
		fmt.Fprint(c.stderr, rest)
	}
	var pe *pickError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, tui.ErrInterrupted), ctx.Err() != nil:
		return exitInterrupted
	case errors.As(err, &pe):
		return c.pickExit(pe.err)
	case a == nil:
		return c.setupExit(err)
	}
	return c.fail(exitOther, "%v", err)
}

type pickError struct{ err error }

func (e *pickError) Error() string { return e.err.Error() }
func (e *pickError) Unwrap() error { return e.err }

var tuiCommands = []tui.Command{
	{Name: "/new", About: "start a new session (it is created with your next message)"},
	{Name: "/session", About: "show the session id"},
	{Name: "/sessions", About: "recent sessions; /sessions ID continues one"},
	{Name: "/model", About: "the models this chat uses; /model NAME switches the next turns to NAME"},
	{Name: "/usage", About: "tokens and cost of this session"},
	{Name: "/compact", About: "compress this session's context now"},
}

// chatState is the chat's session; the UI runs one turn or command at a
// time, so it needs no lock.
type chatState struct {
	c   *cli
	a   *app
	sid string
	// rf and ap build the app again when /model switches the model;
	// first is the model and provider the chat started with.
	rf    *routeFlags
	ap    *tuiApprover
	first modelChoice

	// steer is the running turn's: the UI offers it messages typed
	// meanwhile, from its own goroutine.
	mu    sync.Mutex
	steer *turn.Steering
}

// steerTurn offers a message to the running turn; false when none runs
// or it takes no more.
func (s *chatState) steerTurn(id, text string) bool {
	s.mu.Lock()
	st := s.steer
	s.mu.Unlock()
	return st != nil && st.Send(turn.SteerMessage{ID: id, Text: text})
}

// info is the footer: model, session, tokens, cost, context use.
func (s *chatState) info(ctx context.Context) tui.Info {
	info := tui.Info{Model: s.a.routes[0].Name(), Session: s.sid, ContextPct: -1}
	if s.sid == "" {
		return info
	}
	ss, err := s.a.store.GetSession(ctx, s.sid)
	if err != nil {
		return info
	}
	info.Tokens = ss.Usage.PromptTokens() + ss.Usage.OutputTokens
	info.CostUSD = ss.CostUSD
	if rows, err := s.a.store.Messages(ctx, ss.ID, store.MessageQuery{}); err == nil {
		msgs, _ := transcript.Project(rows)
		n := compact.EstimateRequest(&llm.Request{System: ss.SystemPrompt, Messages: msgs, Tools: s.a.agent.Tools().Specs()})
		info.ContextPct = n * 100 / max(s.a.agent.ModelInfo().Window, 1)
	}
	return info
}

func (s *chatState) turn(ctx context.Context, ui *tui.UI, text string) tui.TurnEnd {
	a := s.a
	if msg, ok := promptFits(a, text); !ok {
		return tui.TurnEnd{Failure: msg, Info: s.info(ctx)}
	}
	if s.sid == "" {
		ns, err := a.agent.NewSession(ctx, agent.SessionOptions{})
		if err != nil {
			return tui.TurnEnd{Failure: store.Describe(err), Info: s.info(ctx)}
		}
		s.sid = ns.ID
	}
	// Model text reaches the terminal unfiltered by the CLI's writer: the
	// filters keep their state across deltas, so a split sequence goes too.
	var tf, rf termFilter
	hooks := turn.Hooks{
		TextDelta:      func(d string) { ui.TextDelta(string(tf.filter(nil, []byte(d)))) },
		ReasoningDelta: func(d string) { ui.ReasoningDelta(string(rf.filter(nil, []byte(d)))) },
		Discard:        ui.Discard,
		ToolStart:      func(call llm.ToolCall) { ui.ToolStart(call.ID, call.Name, termSafe(keyArg(call))) },
		ToolEnd: func(call llm.ToolCall, res tool.Result, took time.Duration) {
			ui.ToolEnd(call.ID, call.Name, termSafe(keyArg(call)), termSafe(res.Content), res.IsError, took)
		},
		Status: func(l string) { ui.Status(termSafe(l)) },
		SubagentStarted: func(ev turn.SubagentEvent) {
			ui.Status("subagent " + ev.SessionID + " started: " + termSafe(clip(ev.Task, 80)))
		},
		SubagentFinished: func(ev turn.SubagentEvent) {
			ui.Status(fmt.Sprintf("subagent %s: %s", ev.SessionID, ev.Exit))
		},
		Todo:    func(items []tool.TodoItem) { ui.Status(termSafe(clip(tool.TodoLine(items), 120))) },
		Steered: func(m turn.SteerMessage) { ui.Steered(m.ID) },
	}
	steer := turn.NewSteering()
	s.mu.Lock()
	s.steer = steer
	s.mu.Unlock()
	res, _ := a.agent.RunTurn(ctx, s.sid, agent.Input{Text: text, Hooks: hooks, Steer: steer})
	// What did not join stays with the UI, which runs it next.
	steer.Close()
	s.mu.Lock()
	s.steer = nil
	s.mu.Unlock()
	end := tui.TurnEnd{Summary: summaryLine(&res)}
	if !res.OK() && res.Explanation != "" {
		end.Failure = s.c.failureLine(a, &res)
	}
	if res.Truncated {
		end.Failure = strings.TrimPrefix(truncatedLine, "talaria: ")
	}
	// The turn may have rotated the session into a continuation.
	if tip, err := store.ResolveTip(context.Background(), a.store, s.sid); err == nil && tip.ID != s.sid {
		end.Summary += " · continuing in " + tip.ID
		s.sid = tip.ID
	}
	end.Info = s.info(context.Background())
	return end
}

func (s *chatState) command(ctx context.Context, line string) tui.CommandResult {
	cmd, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	var b strings.Builder
	switch cmd {
	case "/model":
		if arg != "" {
			b.WriteString(s.switchModel(ctx, arg))
			break
		}
		for i, r := range s.a.routes {
			role := "fallback"
			if i == 0 {
				role = "primary"
			}
			fmt.Fprintf(&b, "%s: %s\n", role, r.Name())
		}
		var list []string
		for _, mc := range s.c.modelChoices(s.a, s.first) {
			list = append(list, mc.String())
		}
		b.WriteString("/model NAME switches the primary for the next turns (PROVIDER/NAME picks the provider); choices: " + strings.Join(list, ", ") + ", or any model of the catalogue")
	case "/sessions":
		if arg != "" {
			if _, err := s.a.store.GetSession(ctx, arg); err != nil {
				b.WriteString("talaria: " + store.Describe(err) + "\n")
				break
			}
			tip, err := store.ResolveTip(ctx, s.a.store, arg)
			if err != nil {
				b.WriteString("talaria: " + store.Describe(err) + "\n")
				break
			}
			s.sid = tip.ID
			b.WriteString(historyTail(ctx, s.a, tip.ID, 6))
			b.WriteString("continuing session " + tip.ID + "\n")
			break
		}
		list, err := s.a.store.ListSessions(ctx, store.ListOptions{Limit: 10})
		if err != nil {
			b.WriteString("talaria: " + store.Describe(err) + "\n")
			break
		}
		for _, ss := range list {
			mark := "  "
			if ss.ID == s.sid {
				mark = "* "
			}
			fmt.Fprintf(&b, "%s%s  %s  %d messages  %s\n", mark, ss.ID, ss.UpdatedAt.Local().Format("2006-01-02 15:04"), ss.MessageCount, termSafe(clip(ss.Title, 50)))
		}
		b.WriteString("/sessions ID continues one")
	default:
		// The line mode's commands, their output collected.
		quit, next := s.c.slash(ctx, s.a, s.sid, line)
		s.sid = next
		if buf, ok := s.c.stdout.(*syncBuffer); ok {
			b.WriteString(buf.take())
		}
		if quit {
			return tui.CommandResult{Output: b.String(), Quit: true}
		}
	}
	info := s.info(ctx)
	return tui.CommandResult{Output: b.String(), Info: &info}
}

// pickList is what the session picker offers: the newest sessions with
// their subagents (the picker draws the tree).
func pickList(ctx context.Context, a *app) ([]tui.SessionItem, error) {
	list, err := a.store.ListSessions(ctx, store.ListOptions{Limit: 200})
	if err != nil {
		return nil, errors.New(store.Describe(err))
	}
	out := make([]tui.SessionItem, 0, len(list))
	for _, ss := range list {
		out = append(out, tui.SessionItem{ID: ss.ID, ParentID: ss.ParentID, Title: termSafe(oneLine(ss.Title)), Model: ss.Model, Updated: ss.UpdatedAt})
	}
	return out, nil
}

// historyTail is the end of a session's conversation, to see where it
// stands when it is resumed: its last n user and answer messages.
func historyTail(ctx context.Context, a *app, id string, n int) string {
	rows, err := a.store.Messages(ctx, id, store.MessageQuery{})
	if err != nil {
		return ""
	}
	msgs, _ := transcript.Project(rows)
	var lines []string
	for _, m := range msgs {
		text := strings.TrimSpace(m.Text())
		if text == "" || (m.Role != llm.RoleUser && m.Role != llm.RoleAssistant) {
			continue
		}
		p := "  "
		if m.Role == llm.RoleUser {
			p = "› "
		}
		lines = append(lines, p+termSafe(clip(oneLine(text), 200)))
	}
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("  … %d earlier messages", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// modelChoice is a model /model can switch to and the provider entry it
// goes to.
type modelChoice struct{ provider, model string }

func (m modelChoice) String() string { return m.model + " (" + m.provider + ")" }

// modelChoices are the models this chat's configuration names with their
// providers: its routes', and its usable providers' (a key set, or an
// endpoint that needs none); then the models declared in the config,
// which go to the primary's provider.
func (c *cli) modelChoices(a *app, also ...modelChoice) []modelChoice {
	seen := map[modelChoice]bool{}
	var out []modelChoice
	add := func(p, m string) {
		if mc := (modelChoice{p, m}); m != "" && !seen[mc] {
			seen[mc] = true
			out = append(out, mc)
		}
	}
	for _, r := range a.routes {
		add(r.Provider.Name(), r.Model)
	}
	for _, mc := range also {
		add(mc.provider, mc.model)
	}
	for _, n := range a.cfg.ProviderNames() {
		if p := a.cfg.Providers[n]; len(p.KeyList(c.getenv)) > 0 || !root.OfficialHost(p.BaseURL) {
			add(n, p.Model)
		}
	}
	declared := make([]string, 0, len(a.cfg.Models))
	for m := range a.cfg.Models {
		declared = append(declared, m)
	}
	sort.Strings(declared)
	primary := a.routes[0].Provider.Name()
	for _, m := range declared {
		add(primary, m)
	}
	return out
}

// resolveModel is where /model NAME goes: PROVIDER/NAME names the provider
// entry; a bare NAME stays with the primary's provider unless only another
// configured provider serves it. A model neither the configuration names
// nor the catalogue knows is refused: a typo must not cost a failed paid
// call.
func (c *cli) resolveModel(a *app, name string, also ...modelChoice) (modelChoice, error) {
	choices := c.modelChoices(a, also...)
	primary := a.routes[0].Provider.Name()
	want := modelChoice{primary, name}
	if p, m, ok := strings.Cut(name, "/"); ok && m != "" {
		if _, configured := a.cfg.Providers[p]; configured || p == primary {
			want = modelChoice{p, m}
		}
	}
	var owners []string
	for _, mc := range choices {
		if mc.model == want.model {
			owners = append(owners, mc.provider)
		}
	}
	bare := want.provider == primary && want.model == name
	switch {
	case slices.Contains(owners, want.provider):
		return want, nil
	case bare && len(owners) == 1:
		return modelChoice{owners[0], want.model}, nil
	case bare && len(owners) > 1:
		return modelChoice{}, fmt.Errorf("%s is served by %s: say which, e.g. /model %s/%s", name, strings.Join(owners, ", "), owners[0], name)
	}
	// The catalogue's own name, not a family match: "gpt-4o-typo" would
	// match gpt-4o's family and still be refused by the provider.
	if known := a.agent.Catalogue().Lookup(want.model); known.Known && strings.EqualFold(known.Model, want.model) {
		return want, nil
	}
	list := make([]string, len(choices))
	for i, mc := range choices {
		list[i] = mc.String()
	}
	return modelChoice{}, fmt.Errorf("unknown model %q; choices: %s, or any model of the catalogue (declare others under models: in the config; /model PROVIDER/NAME picks the provider)", name, strings.Join(list, ", "))
}

// switchModel makes name the primary model of the next turns. The chat's
// app is built again with it; the session and its history stay.
func (s *chatState) switchModel(ctx context.Context, name string) string {
	to, err := s.c.resolveModel(s.a, name, s.first)
	if err != nil {
		return "talaria: " + err.Error()
	}
	// From the chat's own flags: back on the first provider they apply.
	rf := *s.rf
	rf.model = to.model
	if to.provider != s.first.provider {
		// Another configured entry: its own endpoint, wire format and
		// keys, not the flags that made this one.
		rf.provider, rf.baseURL, rf.api, rf.apiKeyEnv = to.provider, "", "", ""
	}
	a, err := s.c.setup(ctx, &rf, s.ap, 5*time.Second)
	if buf, ok := s.c.stdout.(*syncBuffer); ok {
		buf.take() // setup's notes (the sandbox line) were shown at start
	}
	if err != nil {
		return "talaria: " + err.Error()
	}
	s.a.Close()
	s.a = a
	return "model: " + a.routes[0].Name() + " for the next turns"
}

// keyArg is the argument that says what a tool call does: its path,
// command, pattern or URL; else its arguments on one line.
func keyArg(call llm.ToolCall) string {
	var args map[string]any
	if json.Unmarshal([]byte(call.Arguments), &args) == nil {
		for _, k := range []string{"command", "path", "pattern", "query", "url", "task", "action"} {
			if v, ok := args[k].(string); ok && v != "" {
				return clip(strings.Join(strings.Fields(v), " "), 120)
			}
		}
	}
	return clip(compactArgs(call.Arguments), 120)
}

// tuiApprover asks in the UI, with a diff for file changes and the
// command and sandbox mode for shell.
type tuiApprover struct {
	ui      *tui.UI
	ws      string
	sandbox string
}

func (p *tuiApprover) Approve(ctx context.Context, call llm.ToolCall, _ tool.Info) (bool, string) {
	d, why := p.ui.Approve(ctx, approvalFor(call, p.ws, p.sandbox))
	return d != tui.Deny, why
}

// maxPreview bounds the file read to show a diff.
const maxPreview = 1 << 20

func approvalFor(call llm.ToolCall, ws, sandboxNote string) tui.Approval {
	a := tui.Approval{Tool: call.Name, Summary: termSafe(keyArg(call))}
	var args struct {
		Path       string  `json:"path"`
		Content    *string `json:"content"`
		OldString  string  `json:"old_string"`
		NewString  *string `json:"new_string"`
		ReplaceAll bool    `json:"replace_all"`
		Command    string  `json:"command"`
	}
	_ = json.Unmarshal([]byte(call.Arguments), &args)
	switch call.Name {
	case "write_file", "edit_file":
		before := readPreview(ws, args.Path)
		var after string
		switch {
		case call.Name == "write_file" && args.Content != nil:
			after = *args.Content
		case call.Name == "edit_file" && args.NewString != nil && strings.Contains(before, args.OldString):
			n := 1
			if args.ReplaceAll {
				n = -1
			}
			after = strings.Replace(before, args.OldString, *args.NewString, n)
		case call.Name == "edit_file" && args.NewString != nil:
			// old_string is not in the file (the tool will say so): show
			// the replacement itself.
			before, after = args.OldString, *args.NewString
		}
		a.Detail = termSafe(tui.UnifiedDiff(args.Path, before, after))
	case "shell":
		cmd := termSafe(strings.TrimSpace(args.Command))
		a.Summary = clip(strings.SplitN(cmd, "\n", 2)[0], 120)
		if strings.Contains(cmd, "\n") || len(cmd) > 120 {
			a.Detail = cmd
		}
		a.Note = sandboxNote
		if a.Prefix = commandPrefix(cmd); a.Prefix != "" {
			// A compound command is never covered by a prefix: Subject
			// stays empty.
			a.Subject = cmd
		}
	default:
		if text, ok := memoryAddText(call); ok {
			a.Note = "kept in the workspace memory: every new session starts with it"
			a.Detail = text
		}
	}
	return a
}

// readPreview reads a workspace file for a diff: "" when it is absent,
// outside the workspace, or too large to show.
func readPreview(ws, p string) string {
	if ws == "" || p == "" {
		return ""
	}
	full := p
	if !filepath.IsAbs(full) {
		full = filepath.Join(ws, p)
	}
	rel, err := filepath.Rel(ws, full)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	fi, err := os.Stat(full)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxPreview {
		return ""
	}
	b, err := os.ReadFile(full)
	if err != nil {
		return ""
	}
	return string(b)
}

// multiCommand tools whose first argument is the real command: "always"
// for "go test" must not cover "go run".
var multiCommand = map[string]bool{"go": true, "git": true, "npm": true, "pnpm": true, "yarn": true, "cargo": true,
	"docker": true, "kubectl": true, "make": true, "python": true, "python3": true, "pip": true, "uv": true, "node": true}

// commandPrefix is what "always for this command" remembers; "" for a
// compound command (a prefix of one says nothing of the rest).
func commandPrefix(cmd string) string {
	if strings.ContainsAny(cmd, ";&|`$<>\n()") {
		return ""
	}
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return ""
	}
	if multiCommand[f[0]] && len(f) > 1 && !strings.HasPrefix(f[1], "-") {
		return f[0] + " " + f[1]
	}
	return f[0]
}
