package acp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/tool/builtin"
	"github.com/talaria-agent/talaria/tool/sandbox"
	"github.com/talaria-agent/talaria/turn"
)

// Workspace is what a session works with: the client's cwd, the MCP servers
// the client passed, and the approver that asks the client.
type Workspace struct {
	Cwd        string
	MCPServers []MCPServer
	// Approver asks the client (session/request_permission); the agent
	// Open builds must use it for tools that change things, unless the
	// operator allowed every tool (--yes).
	Approver turn.Approver
	// TextReader and TextWriter go through the editor's buffers
	// (fs/read_text_file, fs/write_text_file) when the client offered them
	// in initialize; nil otherwise. Open passes them to the file tools.
	TextReader builtin.TextReader
	TextWriter builtin.TextWriter
	// Mode is the sandbox mode the editor chose (session/set_mode): Open
	// must never make it wider than the configured one. "" is the
	// configured mode.
	Mode sandbox.Mode
}

// Options configure a Server.
type Options struct {
	// Store holds the sessions session/list and session/load read.
	Store store.SessionService
	// Open builds the Talaria agent one ACP session runs on; the returned
	// func releases what it started (MCP servers) and is called when the
	// session is replaced or the connection ends.
	Open func(ctx context.Context, w Workspace) (*agent.Agent, func(), error)
	// Window returns the context window of model (0: unknown), for
	// usage_update; nil sends none.
	Window func(model string) int64
	// SandboxMode is the configured sandbox mode; when set, sessions offer
	// it and the narrower ones as ACP modes (session/set_mode).
	SandboxMode string
	Version     string
	Logger      *slog.Logger
}

// Server is the agent side of one ACP connection.
type Server struct {
	opt  Options
	conn *Conn
	log  *slog.Logger

	mu          sync.Mutex
	initialized bool
	client      ClientCapabilities
	sessions    map[string]*session
}

// session is an open ACP session: a Talaria session and the agent it runs on.
type session struct {
	id    string
	cwd   string
	ag    *agent.Agent
	close func()
	files *editorFiles // the client's file system, as far as it offered one
	// servers and mode are what the agent was opened with, to reopen it
	// in another mode.
	servers []MCPServer
	mode    sandbox.Mode

	mu      sync.Mutex
	cancel  context.CancelFunc // the running prompt's; nil when idle
	always  map[string]bool    // tools the client allowed for the session
	running bool
}

// NewServer makes a server for one connection.
func NewServer(opt Options) *Server {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{opt: opt, log: opt.Logger, sessions: map[string]*session{}}
}

// Serve speaks ACP on r and w until r ends or ctx is done; running turns
// are interrupted and every session's agent is closed on the way out.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	s.conn = NewConn(r, w, s.handle, s.log)
	err := s.conn.Serve(ctx)
	s.mu.Lock()
	open := s.sessions
	s.sessions = map[string]*session{}
	s.mu.Unlock()
	for _, ss := range open {
		ss.release()
	}
	return err
}

func (ss *session) release() {
	ss.ag.Close()
	if ss.close != nil {
		ss.close()
	}
}

func (s *Server) handle(ctx context.Context, method string, params json.RawMessage, notification bool) (any, error) {
	if method == MethodSessionCancel {
		var p CancelNotification
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		s.cancel(p.SessionID)
		return nil, nil
	}
	if notification {
		return nil, Errorf(CodeMethodNotFound, "unknown notification %q", method)
	}
	if method == MethodInitialize {
		return s.initialize(params)
	}
	s.mu.Lock()
	ok := s.initialized
	s.mu.Unlock()
	if !ok {
		return nil, Errorf(CodeInvalidRequest, "call initialize first")
	}
	switch method {
	case MethodAuthenticate:
		return s.authenticate(params)
	case MethodSessionNew:
		return s.newSession(ctx, params)
	case MethodSessionLoad:
		return s.loadSession(ctx, params)
	case MethodSessionList:
		return s.listSessions(ctx, params)
	case MethodSessionPrompt:
		return s.prompt(ctx, params)
	case MethodSessionSetMode:
		return s.setMode(ctx, params)
	}
	return nil, Errorf(CodeMethodNotFound, "talaria does not offer %q", method)
}

func decode(params json.RawMessage, v any) error {
	if len(params) == 0 || string(params) == "null" {
		return Errorf(CodeInvalidParams, "params are required")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return Errorf(CodeInvalidParams, "invalid params: %v", err)
	}
	return nil
}

func (s *Server) initialize(params json.RawMessage) (any, error) {
	var p InitializeRequest
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	v, err := strconv.ParseUint(string(p.ProtocolVersion), 10, 16)
	if err != nil {
		return nil, Errorf(CodeInvalidParams, "protocolVersion must be an integer, got %s", p.ProtocolVersion)
	}
	_ = v // the requested version when it is ours, else the latest we speak: 1 either way
	s.mu.Lock()
	s.initialized = true
	s.client = p.ClientCapabilities
	s.mu.Unlock()
	return InitializeResponse{
		ProtocolVersion: ProtocolVersion,
		AgentCapabilities: AgentCapabilities{
			LoadSession:         true,
			PromptCapabilities:  PromptCapabilities{Image: true, EmbeddedContext: true},
			MCPCapabilities:     MCPCapabilities{HTTP: true, SSE: true},
			SessionCapabilities: SessionCapabilities{List: &struct{}{}},
		},
		AuthMethods: []AuthMethod{},
		AgentInfo:   &Implementation{Name: "talaria", Title: "Talaria", Version: s.opt.Version},
	}, nil
}

// authenticate: Talaria offers no methods (provider keys come from its own
// configuration), so any method id is unknown.
func (s *Server) authenticate(params json.RawMessage) (any, error) {
	var p AuthenticateRequest
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	return nil, Errorf(CodeInvalidParams, "talaria offers no authentication methods (got %q): provider keys come from its configuration", p.MethodID)
}

func checkCwd(cwd string) error {
	if !filepath.IsAbs(cwd) {
		return Errorf(CodeInvalidParams, "cwd must be an absolute path, got %q", cwd)
	}
	if st, err := os.Stat(cwd); err != nil || !st.IsDir() {
		return Errorf(CodeInvalidParams, "cwd %q is not a directory", cwd)
	}
	return nil
}

func checkServers(servers []MCPServer) error {
	for _, m := range servers {
		switch {
		case m.Name == "":
			return Errorf(CodeInvalidParams, "an MCP server needs a name")
		case m.Type == "" && m.Command == "":
			return Errorf(CodeInvalidParams, "MCP server %q: a stdio server needs a command", m.Name)
		case (m.Type == "http" || m.Type == "sse") && m.URL == "":
			return Errorf(CodeInvalidParams, "MCP server %q: needs a url", m.Name)
		case m.Type != "" && m.Type != "http" && m.Type != "sse":
			return Errorf(CodeInvalidParams, "MCP server %q: unknown type %q", m.Name, m.Type)
		}
	}
	return nil
}

// open builds the agent for a session in cwd and registers it under id
// (an id already open is replaced: its agent is closed).
func (s *Server) open(ctx context.Context, cwd string, servers []MCPServer, mode sandbox.Mode) (*session, error) {
	if err := checkCwd(cwd); err != nil {
		return nil, err
	}
	if err := checkServers(servers); err != nil {
		return nil, err
	}
	ss := &session{cwd: cwd, servers: servers, mode: mode, always: map[string]bool{}}
	w := Workspace{Cwd: cwd, MCPServers: servers, Approver: &approver{s: s, ss: ss}, Mode: mode}
	s.mu.Lock()
	ss.files = newEditorFiles(s, ss, s.client.FS)
	s.mu.Unlock()
	w.TextReader, w.TextWriter = ss.files.editorIO()
	ag, closeFn, err := s.opt.Open(ctx, w)
	if err != nil {
		return nil, fmt.Errorf("starting a session in %s: %w", cwd, err)
	}
	ss.ag, ss.close = ag, closeFn
	return ss, nil
}

func (s *Server) register(ss *session) {
	s.mu.Lock()
	old := s.sessions[ss.id]
	s.sessions[ss.id] = ss
	s.mu.Unlock()
	if old != nil {
		old.interrupt()
		old.release()
	}
}

func (s *Server) newSession(ctx context.Context, params json.RawMessage) (any, error) {
	var p NewSessionRequest
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	ss, err := s.open(ctx, p.Cwd, p.MCPServers, "")
	if err != nil {
		return nil, err
	}
	sess, err := ss.ag.NewSession(ctx, agent.SessionOptions{})
	if err != nil {
		ss.release()
		return nil, err
	}
	ss.id = sess.ID
	s.register(ss)
	return NewSessionResponse{SessionID: sess.ID, Modes: s.modes(sandbox.Mode(s.opt.SandboxMode))}, nil
}

func (s *Server) loadSession(ctx context.Context, params json.RawMessage) (any, error) {
	var p LoadSessionRequest
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if p.SessionID == "" {
		return nil, Errorf(CodeInvalidParams, "sessionId is required")
	}
	if _, err := s.opt.Store.GetSession(ctx, p.SessionID); err != nil {
		if store.KindOf(err) == store.KindNotFound {
			return nil, Errorf(CodeNotFound, "no session %q", p.SessionID)
		}
		return nil, err
	}
	msgs, err := s.opt.Store.Messages(ctx, p.SessionID, store.MessageQuery{IncludeArchived: true})
	if err != nil {
		return nil, err
	}
	ss, err := s.open(ctx, p.Cwd, p.MCPServers, "")
	if err != nil {
		return nil, err
	}
	ss.id = p.SessionID
	// The history goes out before the answer, as the protocol asks.
	s.replay(p.SessionID, msgs)
	s.register(ss)
	return LoadSessionResponse{Modes: s.modes(sandbox.Mode(s.opt.SandboxMode))}, nil
}

// replay sends a session's stored rows as session/update notifications.
func (s *Server) replay(id string, msgs []store.Message) {
	calls := map[string]llm.ToolCall{}
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleUser:
			if m.Synthetic || m.Kind == store.RowUnsent {
				continue
			}
			if t := m.Text(); t != "" {
				s.update(id, SessionUpdate{SessionUpdate: "user_message_chunk", Content: ptr(TextBlock(t))})
			}
		case llm.RoleAssistant:
			if m.Kind == store.RowFailure || m.Kind == store.RowNotice {
				continue
			}
			if m.Reasoning != nil && m.Reasoning.Text != "" {
				s.update(id, SessionUpdate{SessionUpdate: "agent_thought_chunk", Content: ptr(TextBlock(m.Reasoning.Text))})
			}
			if t := m.Text(); t != "" {
				s.update(id, SessionUpdate{SessionUpdate: "agent_message_chunk", Content: ptr(TextBlock(t))})
			}
			for _, c := range m.ToolCalls {
				calls[c.ID] = c
				tc := toolCall(c, "")
				tc.Status = StatusPending
				s.update(id, SessionUpdate{SessionUpdate: "tool_call", ToolCall: &tc})
			}
		case llm.RoleTool:
			status := StatusCompleted
			if m.IsError {
				status = StatusFailed
			}
			tc := ToolCall{ToolCallID: m.ToolCallID, Status: status,
				Content: []ToolCallContent{{Type: "content", Content: ptr(TextBlock(m.Text()))}}}
			s.update(id, SessionUpdate{SessionUpdate: "tool_call_update", ToolCall: &tc})
		}
	}
}

func ptr[T any](v T) *T { return &v }

func (s *Server) listSessions(ctx context.Context, params json.RawMessage) (any, error) {
	var p ListSessionsRequest
	if len(params) > 0 && string(params) != "null" {
		if err := decode(params, &p); err != nil {
			return nil, err
		}
	}
	const page = 50
	offset := 0
	if p.Cursor != nil && *p.Cursor != "" {
		n, err := strconv.Atoi(*p.Cursor)
		if err != nil || n < 0 {
			return nil, Errorf(CodeInvalidParams, "cursor %q is not one this agent gave", *p.Cursor)
		}
		offset = n
	}
	all, err := s.opt.Store.ListSessions(ctx, store.ListOptions{Limit: page + 1, Offset: offset})
	if err != nil {
		return nil, err
	}
	out := ListSessionsResponse{Sessions: []SessionInfo{}}
	for i, ss := range all {
		if i == page {
			next := strconv.Itoa(offset + page)
			out.NextCursor = &next
			break
		}
		if ss.Kind != "" || (p.Cwd != nil && *p.Cwd != "" && ss.Cwd != *p.Cwd) {
			continue
		}
		out.Sessions = append(out.Sessions, SessionInfo{SessionID: ss.ID, Cwd: ss.Cwd, Title: ss.Title,
			UpdatedAt: ss.UpdatedAt.UTC().Format(time.RFC3339)})
	}
	return out, nil
}

func (s *Server) session(id string) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[id]
	if !ok {
		return nil, Errorf(CodeNotFound, "session %q is not open on this connection: session/new or session/load it first", id)
	}
	return ss, nil
}

func (s *Server) cancel(id string) {
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss != nil {
		ss.interrupt()
	}
}

func (ss *session) interrupt() {
	ss.mu.Lock()
	c := ss.cancel
	ss.mu.Unlock()
	if c != nil {
		c()
	}
	ss.ag.Interrupt(ss.id)
}

// promptInput turns the client's content blocks into a turn's input.
func promptInput(blocks []ContentBlock) (agent.Input, error) {
	var in agent.Input
	var text []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "resource_link":
			text = append(text, fmt.Sprintf("[%s](%s)", b.Name, b.URI))
		case "resource":
			if b.Resource == nil || b.Resource.Text == "" {
				return in, Errorf(CodeInvalidParams, "an embedded resource needs text (binary resources are not supported)")
			}
			text = append(text, fmt.Sprintf("<file uri=%q>\n%s\n</file>", b.Resource.URI, b.Resource.Text))
		case "image":
			data, err := base64.StdEncoding.DecodeString(b.Data)
			if err != nil {
				return in, Errorf(CodeInvalidParams, "image data is not base64: %v", err)
			}
			in.Images = append(in.Images, llm.Part{Type: llm.PartImage, MediaType: b.MimeType, Data: data, URL: b.URI})
		default:
			return in, Errorf(CodeInvalidParams, "content of type %q is not supported", b.Type)
		}
	}
	in.Text = strings.Join(text, "\n\n")
	if strings.TrimSpace(in.Text) == "" && len(in.Images) == 0 {
		return in, Errorf(CodeInvalidParams, "the prompt is empty")
	}
	return in, nil
}

func (s *Server) prompt(ctx context.Context, params json.RawMessage) (any, error) {
	var p PromptRequest
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	ss, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	in, err := promptInput(p.Prompt)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ss.mu.Lock()
	if ss.running {
		ss.mu.Unlock()
		return nil, Errorf(CodeInvalidRequest, "a prompt is already running in session %s; cancel it first", ss.id)
	}
	ss.running, ss.cancel = true, cancel
	ss.mu.Unlock()
	defer func() {
		ss.mu.Lock()
		ss.running, ss.cancel = false, nil
		ss.mu.Unlock()
	}()
	tw := &turnWatch{s: s, ss: ss, before: map[string]*string{}}
	in.Hooks = tw.hooks()
	res, err := ss.ag.RunTurn(ctx, ss.id, in)
	if err != nil {
		if store.KindOf(err) == store.KindNotFound {
			return nil, Errorf(CodeNotFound, "%s", res.Explanation)
		}
		return nil, &Error{Code: CodeInternalError, Message: res.Explanation, Data: map[string]any{"exit": res.Exit}}
	}
	s.usage(ss.id, &res)
	return s.stopReason(&res)
}

// stopReason maps the turn's exit onto ACP: the turn's own ends are stop
// reasons; a failure (provider, storage, busy session) is an error carrying
// the explanation and Talaria's exit.
func (s *Server) stopReason(res *turn.Result) (any, error) {
	meta := map[string]any{"talaria": map[string]any{
		"exit": res.Exit, "sessionId": res.SessionID, "turnId": res.TurnID,
		"inputTokens": res.Usage.InputTokens, "outputTokens": res.Usage.OutputTokens, "costUsd": res.CostUSD,
	}}
	var r StopReason
	switch res.Exit {
	case turn.ExitCompleted:
		r = StopEndTurn
		if res.Truncated {
			r = StopMaxTokens
		}
	case turn.ExitInterrupted:
		r = StopCancelled
	case turn.ExitBudgetExhausted, turn.ExitToolLoop:
		r = StopMaxTurnRequests
	default:
		data := map[string]any{"exit": res.Exit}
		if f := res.Failure; f != nil && f.Class != "" {
			// A provider's failure; the turn's own failures are named by
			// exit alone.
			data["class"] = f.Class
		}
		msg := res.Explanation
		if msg == "" {
			msg = "the turn ended: " + string(res.Exit)
		}
		return nil, &Error{Code: CodeInternalError, Message: msg, Data: data}
	}
	return PromptResponse{StopReason: r, Meta: meta}, nil
}

// usage reports the context used and the turn's cost where ACP has a
// place for them (usage_update).
func (s *Server) usage(id string, res *turn.Result) {
	if s.opt.Window == nil || res.APICalls == 0 {
		return
	}
	size := s.opt.Window(res.Model)
	if size <= 0 {
		return
	}
	used := res.Usage.InputTokens + res.Usage.OutputTokens
	if res.APICalls > 0 {
		used /= int64(res.APICalls) // the turn's last prompt, roughly; never more than the window
	}
	u := SessionUpdate{SessionUpdate: "usage_update", Used: &used, Size: &size}
	if res.CostKnown {
		u.Cost = &Cost{Amount: res.CostUSD, Currency: "USD"}
	}
	s.update(id, u)
}

func (s *Server) update(id string, u SessionUpdate) {
	if err := s.conn.Notify(MethodSessionUpdate, SessionNotification{SessionID: id, Update: u}); err != nil {
		s.log.Debug("acp: session/update", "err", err)
	}
}

// approver asks the client before a tool that changes things runs.
type approver struct {
	s  *Server
	ss *session
}

func (a *approver) Approve(ctx context.Context, call llm.ToolCall, info tool.Info) (bool, string) {
	a.ss.mu.Lock()
	always := a.ss.always[call.Name]
	a.ss.mu.Unlock()
	if always {
		return true, ""
	}
	tc := toolCall(call, a.ss.cwd)
	tc.Status = StatusPending
	req := RequestPermissionRequest{SessionID: a.ss.id, ToolCall: tc, Options: []PermissionOption{
		{OptionID: AllowOnce, Name: "Allow", Kind: AllowOnce},
		{OptionID: AllowAlways, Name: "Allow " + call.Name + " for this session", Kind: AllowAlways},
		{OptionID: RejectOnce, Name: "Reject", Kind: RejectOnce},
	}}
	var resp RequestPermissionResponse
	if err := a.s.conn.Call(ctx, MethodRequestPermission, req, &resp); err != nil {
		if errors.Is(err, context.Canceled) || ctx.Err() != nil {
			return false, "The user cancelled the turn before approving " + call.Name + "."
		}
		return false, fmt.Sprintf("Could not ask the user to approve %s (%v); do not retry it.", call.Name, err)
	}
	if resp.Outcome.Outcome != "selected" {
		return false, "The user cancelled instead of approving " + call.Name + "."
	}
	switch resp.Outcome.OptionID {
	case AllowAlways:
		a.ss.mu.Lock()
		a.ss.always[call.Name] = true
		a.ss.mu.Unlock()
		return true, ""
	case AllowOnce:
		return true, ""
	}
	return false, "The user rejected this call of " + call.Name + "; do not retry it unchanged."
}
