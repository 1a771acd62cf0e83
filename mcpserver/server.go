// Package mcpserver exposes durable Talaria turns as MCP tools (run_turn,
// list_sessions, get_session), on the official MCP go-sdk, so any MCP host
// can hand a task to a Talaria session and continue it later.
package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// Options configure the server.
type Options struct {
	// Agent runs the turns; Store is the one it writes (sessions are read
	// from it).
	Agent *agent.Agent
	Store store.SessionService
	// Unattended lets the tool-loop guard stop a turn (nobody watches an
	// MCP host's call the way a person watches chat).
	Unattended bool
	Version    string
	Logger     *slog.Logger
}

// RunTurnResult is run_turn's structured result.
type RunTurnResult struct {
	SessionID   string    `json:"session_id"`
	TurnID      string    `json:"turn_id"`
	Exit        turn.Exit `json:"exit"`
	Answer      string    `json:"answer"`
	Explanation string    `json:"explanation,omitempty"`
	Usage       llm.Usage `json:"usage"`
	CostUSD     float64   `json:"cost_usd"`
	ToolCalls   int       `json:"tool_calls"`
}

// SessionSummary is one row of list_sessions.
type SessionSummary struct {
	SessionID string    `json:"session_id"`
	Title     string    `json:"title,omitempty"`
	Workspace string    `json:"workspace,omitempty"`
	Model     string    `json:"model,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
	Ended     bool      `json:"ended,omitempty"`
}

// SessionMessage is one stored row as get_session shows it.
type SessionMessage struct {
	Role       string         `json:"role"`
	Text       string         `json:"text,omitempty"`
	ToolCalls  []llm.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Kind       string         `json:"kind,omitempty"`
	IsError    bool           `json:"is_error,omitempty"`
}

// SessionDetail is get_session's result.
type SessionDetail struct {
	SessionSummary
	InputTokens  int64            `json:"input_tokens"`
	OutputTokens int64            `json:"output_tokens"`
	CostUSD      float64          `json:"cost_usd"`
	Messages     []SessionMessage `json:"messages"`
}

const (
	runTurnSchema = `{"type":"object","properties":{` +
		`"prompt":{"type":"string","description":"What to do: the user's message for the turn."},` +
		`"session_id":{"type":"string","description":"Continue this Talaria session (from an earlier run_turn); omit to start a new one."}` +
		`},"required":["prompt"],"additionalProperties":false}`
	listSchema = `{"type":"object","properties":{` +
		`"limit":{"type":"integer","minimum":1,"maximum":200,"description":"At most this many, newest first (default 20)."}` +
		`},"additionalProperties":false}`
	getSchema = `{"type":"object","properties":{` +
		`"session_id":{"type":"string"},` +
		`"last":{"type":"integer","minimum":1,"description":"Only the last N messages (default all)."}` +
		`},"required":["session_id"],"additionalProperties":false}`
)

// The tools' arguments, as their schemas above describe them.
type (
	runTurnArgs struct {
		Prompt    string `json:"prompt"`
		SessionID string `json:"session_id"`
	}
	listArgs struct {
		Limit int `json:"limit"`
	}
	getArgs struct {
		SessionID string `json:"session_id"`
		Last      int    `json:"last"`
	}
)

// New builds the MCP server; run it with Run on a transport.
func New(opt Options) *sdk.Server {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "talaria", Title: "Talaria", Version: opt.Version},
		&sdk.ServerOptions{Logger: opt.Logger, Instructions: "Talaria runs durable, bounded agent turns in its workspace. " +
			"run_turn returns the answer and a session_id; pass it back to continue the same session."})
	h := &handlers{opt: opt}
	no := false
	s.AddTool(&sdk.Tool{Name: "run_turn", Title: "Run a Talaria turn",
		Description: "Run one durable agent turn in Talaria's workspace: the agent reads files, runs tools and answers. " +
			"Returns the answer and the session_id; pass session_id to continue the conversation.",
		InputSchema: json.RawMessage(runTurnSchema), Annotations: &sdk.ToolAnnotations{OpenWorldHint: &no}}, withArgs(h.runTurn))
	s.AddTool(&sdk.Tool{Name: "list_sessions", Title: "List Talaria sessions",
		Description: "List Talaria's conversation sessions, newest first.",
		InputSchema: json.RawMessage(listSchema), Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no}}, withArgs(h.listSessions))
	s.AddTool(&sdk.Tool{Name: "get_session", Title: "Show a Talaria session",
		Description: "Show one Talaria session: its messages, tool calls, usage and cost.",
		InputSchema: json.RawMessage(getSchema), Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no}}, withArgs(h.getSession))
	return s
}

type handlers struct{ opt Options }

// toolError is a tool-level error: the host's model reads it.
func toolError(format string, a ...any) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf(format, a...)}}}
}

// withArgs adapts a handler of decoded arguments: arguments that do not
// decode (unknown fields included) are a tool error for the host's model.
func withArgs[A any](run func(context.Context, *sdk.CallToolRequest, A) (*sdk.CallToolResult, error)) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		raw := req.Params.Arguments
		if len(raw) == 0 || string(raw) == "null" {
			raw = json.RawMessage("{}")
		}
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		var in A
		if err := dec.Decode(&in); err != nil {
			return toolError("invalid arguments: %v", err), nil
		}
		return run(ctx, req, in)
	}
}

func jsonResult(text string, v any) *sdk.CallToolResult {
	b, _ := json.Marshal(v)
	if text == "" {
		text = string(b)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, StructuredContent: json.RawMessage(b)}
}

// progress sends numbered progress notifications for one call, when the
// host asked for them (a progress token).
type progress struct {
	req   *sdk.CallToolRequest
	token any
	mu    sync.Mutex
	n     float64
	text  bool // a "writing the answer" notice was sent since the last tool
}

func (p *progress) say(ctx context.Context, msg string) {
	if p.token == nil {
		return
	}
	p.mu.Lock()
	p.n++
	n := p.n
	p.mu.Unlock()
	_ = p.req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: p.token, Progress: n, Message: msg})
}

func (p *progress) hooks(ctx context.Context) turn.Hooks {
	return turn.Hooks{
		TextDelta: func(string) {
			p.mu.Lock()
			first := !p.text
			p.text = true
			p.mu.Unlock()
			if first {
				p.say(ctx, "writing the answer")
			}
		},
		ToolStart: func(c llm.ToolCall) {
			p.mu.Lock()
			p.text = false
			p.mu.Unlock()
			p.say(ctx, "running "+c.Name)
		},
		ToolEnd: func(c llm.ToolCall, r tool.Result, d time.Duration) {
			state := "done"
			if r.IsError {
				state = "failed"
			}
			p.say(ctx, fmt.Sprintf("%s %s in %s", c.Name, state, d.Round(time.Millisecond)))
		},
		Status: func(line string) { p.say(ctx, line) },
	}
}

func (h *handlers) runTurn(ctx context.Context, req *sdk.CallToolRequest, in runTurnArgs) (*sdk.CallToolResult, error) {
	if strings.TrimSpace(in.Prompt) == "" {
		return toolError("prompt is empty: say what to do"), nil
	}
	sid := in.SessionID
	if sid == "" {
		s, err := h.opt.Agent.NewSession(ctx, agent.SessionOptions{})
		if err != nil {
			return nil, fmt.Errorf("new session: %w", err)
		}
		sid = s.ID
	}
	p := &progress{req: req, token: req.Params.GetProgressToken()}
	p.say(ctx, "turn started in session "+sid)
	// The host's notifications/cancelled cancels ctx: the turn stops the way
	// Ctrl+C stops it, and its session stays consistent.
	res, err := h.opt.Agent.RunTurn(ctx, sid, agent.Input{Text: in.Prompt, Hooks: p.hooks(ctx), Unattended: h.opt.Unattended})
	out := RunTurnResult{SessionID: res.SessionID, TurnID: res.TurnID, Exit: res.Exit, Answer: res.FinalText,
		Explanation: res.Explanation, Usage: res.Usage, CostUSD: res.CostUSD, ToolCalls: res.ToolCalls}
	if err != nil {
		return toolError("%s", res.Explanation), nil
	}
	r := jsonResult("", out)
	text := res.FinalText
	if !res.OK() {
		r.IsError = true
		text = strings.TrimSpace(text + "\n\n[talaria: " + string(res.Exit) + "] " + res.Explanation)
	}
	r.Content = []sdk.Content{&sdk.TextContent{Text: text}, &sdk.TextContent{Text: "session_id: " + res.SessionID}}
	return r, nil
}

func (h *handlers) listSessions(ctx context.Context, _ *sdk.CallToolRequest, in listArgs) (*sdk.CallToolResult, error) {
	if in.Limit <= 0 {
		in.Limit = 20
	}
	all, err := h.opt.Store.ListSessions(ctx, store.ListOptions{Limit: in.Limit})
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	out := struct {
		Sessions []SessionSummary `json:"sessions"`
	}{Sessions: []SessionSummary{}}
	for _, s := range all {
		if s.Kind != "" {
			continue // subagents and reviews belong to their parent
		}
		out.Sessions = append(out.Sessions, summary(&s))
	}
	return jsonResult("", out), nil
}

func summary(s *store.Session) SessionSummary {
	return SessionSummary{SessionID: s.ID, Title: s.Title, Workspace: s.Cwd, Model: s.Model, UpdatedAt: s.UpdatedAt, Ended: !s.EndedAt.IsZero()}
}

func (h *handlers) getSession(ctx context.Context, _ *sdk.CallToolRequest, in getArgs) (*sdk.CallToolResult, error) {
	s, err := h.opt.Store.GetSession(ctx, in.SessionID)
	if err != nil {
		if store.KindOf(err) == store.KindNotFound {
			return toolError("no session %q (list_sessions lists them)", in.SessionID), nil
		}
		return nil, fmt.Errorf("get session: %w", err)
	}
	msgs, err := h.opt.Store.Messages(ctx, s.ID, store.MessageQuery{})
	if err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	if in.Last > 0 && len(msgs) > in.Last {
		msgs = msgs[len(msgs)-in.Last:]
	}
	d := SessionDetail{SessionSummary: summary(s), Messages: make([]SessionMessage, 0, len(msgs))}
	d.InputTokens, d.OutputTokens, d.CostUSD = s.Usage.InputTokens, s.Usage.OutputTokens, s.CostUSD
	for _, m := range msgs {
		d.Messages = append(d.Messages, SessionMessage{Role: string(m.Role), Text: m.Text(), ToolCalls: m.ToolCalls,
			ToolCallID: m.ToolCallID, Kind: string(m.Kind), IsError: m.IsError})
	}
	return jsonResult("", d), nil
}
