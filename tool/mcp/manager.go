package mcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/talaria-agent/talaria/tool"
)

// Options configure a Manager.
type Options struct {
	Servers []ServerConfig
	// Getenv resolves ${VAR} references (default os.Getenv).
	Getenv func(string) string
	Logger *slog.Logger
	// Status receives one line per fault the user should know of (a
	// server that did not start, crashed, or hung past its timeout). It
	// may be called from any goroutine.
	Status func(line string)
	// MaxRestarts bounds restarts of a crashed server per process
	// (default 3); RestartBackoff is the wait before the first restart,
	// doubled for each further one (default 500ms).
	MaxRestarts    int
	RestartBackoff time.Duration
	// Grace is how long a stdio server gets to exit after its stdin is
	// closed, and again after SIGTERM (default 2s).
	Grace time.Duration
	// Version is sent as the client version.
	Version string
}

// Manager owns the MCP servers of one process. Start it once; sessions
// then take a Session each. It is safe for concurrent use.
type Manager struct {
	log         *slog.Logger
	getenv      func(string) string
	statusFn    func(string)
	maxRestarts int
	backoff     time.Duration
	grace       time.Duration
	version     string

	configs []ServerConfig     // sorted by name
	shared  map[string]*server // servers that are not per-session

	startOnce sync.Once
	mu        sync.Mutex
	sessions  map[*Session]struct{}
	closed    bool
}

// New checks the configuration and builds a Manager; nothing starts yet.
func New(opts Options) (*Manager, error) {
	m := &Manager{
		log: opts.Logger, getenv: opts.Getenv, statusFn: opts.Status,
		maxRestarts: opts.MaxRestarts, backoff: opts.RestartBackoff, grace: opts.Grace,
		version: opts.Version, shared: map[string]*server{}, sessions: map[*Session]struct{}{},
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.getenv == nil {
		m.getenv = os.Getenv
	}
	if m.maxRestarts <= 0 {
		m.maxRestarts = 3
	}
	if m.backoff <= 0 {
		m.backoff = 500 * time.Millisecond
	}
	if m.grace <= 0 {
		m.grace = 2 * time.Second
	}
	if m.version == "" {
		m.version = "dev"
	}
	m.configs = slices.Clone(opts.Servers)
	slices.SortFunc(m.configs, func(a, b ServerConfig) int { return cmp.Compare(a.Name, b.Name) })
	var errs []error
	for i, c := range m.configs {
		switch {
		case c.Name == "":
			errs = append(errs, errors.New("mcp: a server has no name"))
		case i > 0 && m.configs[i-1].Name == c.Name:
			errs = append(errs, fmt.Errorf("mcp: server %q is configured twice", c.Name))
		case (c.Command == "") == (c.URL == ""):
			errs = append(errs, fmt.Errorf("mcp: server %q needs either a command or a url", c.Name))
		}
		if !c.PerSession {
			m.shared[c.Name] = newServer(m, c)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Manager) status(line string) {
	if m.statusFn == nil {
		m.log.Warn(line)
		return
	}
	m.log.Debug(line)
	m.statusFn(line)
}

// Start starts the shared servers, in parallel, and waits until each is
// ready or has failed (a failure is reported, not returned: the other
// servers' tools are still offered). Later calls do nothing. Calling it is
// optional: Session starts whatever is not running yet; a long-lived
// process (the gateway) calls Start at boot so its first session does not
// wait for the servers.
func (m *Manager) Start(ctx context.Context) {
	m.startOnce.Do(func() {
		var list []*server
		for _, c := range m.configs {
			if s := m.shared[c.Name]; s != nil {
				list = append(list, s)
			}
		}
		startAll(ctx, list)
	})
}

func startAll(ctx context.Context, list []*server) {
	var wg sync.WaitGroup
	for _, s := range list {
		wg.Go(func() { _ = s.start(ctx) })
	}
	wg.Wait()
}

// Session fixes the tool list of one session: the shared servers' tools as
// they are now (lists that changed are read again), and the tools of fresh
// instances of per-session servers, which the Session owns. reserved names
// (the built-in tools) are never given to an MCP tool. Close the Session
// when the session ends.
func (m *Manager) Session(ctx context.Context, reserved ...string) (*Session, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errors.New("mcp: the manager is closed")
	}
	sess := &Session{m: m}
	m.sessions[sess] = struct{}{}
	m.mu.Unlock()

	var servers, start []*server
	for _, c := range m.configs {
		if c.PerSession {
			s := newServer(m, c)
			sess.own = append(sess.own, s)
			servers = append(servers, s)
			start = append(start, s)
		} else {
			// A shared server that failed to start, or crashed while
			// idle, is tried again (within its restart bound).
			servers = append(servers, m.shared[c.Name])
			start = append(start, m.shared[c.Name])
		}
	}
	startAll(ctx, start)
	sess.build(ctx, servers, reserved)
	for _, w := range sess.warnings {
		m.status(w)
	}
	return sess, nil
}

// Close shuts every server down (shared ones and those of open sessions)
// and reaps their processes. In-flight calls end with an error result.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	list := make([]*server, 0, len(m.shared))
	for _, s := range m.shared {
		list = append(list, s)
	}
	for sess := range m.sessions {
		list = append(list, sess.own...)
	}
	m.mu.Unlock()
	closeAll(list)
}

func closeAll(list []*server) {
	var wg sync.WaitGroup
	for _, s := range list {
		wg.Go(s.close)
	}
	wg.Wait()
}

// Session is the MCP side of one agent session: its fixed tool list and
// its own per-session servers.
type Session struct {
	m        *Manager
	own      []*server
	tools    []tool.Tool
	reports  []ServerReport
	warnings []string
	once     sync.Once
}

// Tools returns the session's MCP tools, sorted by model name. The list
// and every tool's Info are fixed for the session.
func (s *Session) Tools() []tool.Tool { return slices.Clone(s.tools) }

// Servers reports each configured server and the tools it offers.
func (s *Session) Servers() []ServerReport { return slices.Clone(s.reports) }

// Warnings lists tools left out or renamed, one line each.
func (s *Session) Warnings() []string { return slices.Clone(s.warnings) }

// Close stops the session's per-session servers.
func (s *Session) Close() {
	s.once.Do(func() {
		s.m.mu.Lock()
		delete(s.m.sessions, s)
		s.m.mu.Unlock()
		closeAll(s.own)
	})
}

// ServerReport is one server as `talaria mcp list --json` shows it.
type ServerReport struct {
	Name       string       `json:"name"`
	Transport  string       `json:"transport"`
	State      string       `json:"state"`
	Error      string       `json:"error"`
	PerSession bool         `json:"per_session,omitempty"`
	StartMS    int64        `json:"start_ms,omitempty"`
	Tools      []ToolReport `json:"tools"`
	// Omitted are tools the server has that are not offered, with why.
	Omitted []OmittedTool `json:"omitted,omitempty"`
}

// ToolReport is one offered tool.
type ToolReport struct {
	Name      string `json:"name"`
	ModelName string `json:"model_name"`
	ReadOnly  bool   `json:"read_only"`
}

// OmittedTool is a tool of a server that is not offered.
type OmittedTool struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

func (s *server) report() ServerReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ServerReport{
		Name: s.cfg.Name, Transport: s.cfg.Kind(), State: s.state, Error: s.err,
		PerSession: s.cfg.PerSession, StartMS: s.startTook.Milliseconds(), Tools: []ToolReport{},
	}
}

// candidate is one server tool considered for a session.
type candidate struct {
	srv    *server
	remote *sdk.Tool
	rep    int // index into reports
}
