// Package testenv builds the real stack for integration tests: the scripted
// model server over real HTTP, a real adapter for either wire format, a real
// SQLite store in a temp dir, real built-in tools in a temp workspace, and
// an agent on top. Nothing is mocked.
package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/anthropic"
	"github.com/talaria-agent/talaria/llm/gemini"
	"github.com/talaria-agent/talaria/llm/openai"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/tool/builtin"
	"github.com/talaria-agent/talaria/turn"
)

// APIs lists every wire format, for table-driven tests: Chat Completions,
// OpenAI Responses, Anthropic Messages, Gemini.
var APIs = []string{"openai", "openai-responses", "anthropic", "gemini"}

// Options shape an Env. Zero values give a default stack.
type Options struct {
	API string // "openai" (default) or "anthropic"
	// Model of the primary route (default "test-model").
	Model string
	// ExtraTools are registered after the built-ins.
	ExtraTools []tool.Tool
	// NoBuiltins leaves the built-in tools out.
	NoBuiltins bool
	// Fallbacks adds routes on the same server, by model name (script them
	// with Srv.ScriptModel).
	Fallbacks []string
	// Keys gives the primary route a key pool.
	Keys []string
	// Configure edits the agent config before the agent is built.
	Configure func(*agent.Config)
	// ServerOptions for the scripted server.
	ServerOptions []fakellm.Option
	// ThinkingBudget turns Anthropic extended thinking on (anthropic API).
	ThinkingBudget int
	// CacheTTL is the Anthropic prompt-cache tier (anthropic.Config.CacheTTL).
	CacheTTL string
}

// Env is one integration-test stack.
type Env struct {
	T         testing.TB
	Srv       *fakellm.Server
	Store     *sqlite.Store
	DBPath    string
	Workspace string
	Agent     *agent.Agent
	Session   *store.Session
	Config    agent.Config
}

// Provider builds an adapter for api against srv, named name.
func Provider(srv *fakellm.Server, api, name string) llm.Provider {
	return ProviderWith(srv, api, name, Options{})
}

// ProviderWith builds an adapter for api against srv, named name, with the
// wire options of o (thinking budget, cache tier).
func ProviderWith(srv *fakellm.Server, api, name string, o Options) llm.Provider {
	switch api {
	case "openai-responses":
		return openai.NewResponses(openai.Config{Name: name, BaseURL: srv.OpenAIBaseURL(), APIKey: "test-key", ReasoningSummary: "auto"})
	case "gemini":
		p, err := gemini.New(gemini.Config{Name: name, BaseURL: srv.GeminiBaseURL(), APIKey: "test-key", ThinkingBudget: o.ThinkingBudget})
		if err != nil {
			panic("testenv: " + err.Error())
		}
		return p
	case "anthropic":
		return anthropic.New(anthropic.Config{Name: name, BaseURL: srv.AnthropicBaseURL(), APIKey: "test-key", ThinkingBudget: o.ThinkingBudget, CacheTTL: o.CacheTTL})
	}
	return openai.NewChat(openai.Config{Name: name, BaseURL: srv.OpenAIBaseURL(), APIKey: "test-key"})
}

// New builds an Env; everything is closed when the test ends.
func New(t testing.TB, o Options) *Env {
	t.Helper()
	if o.API == "" {
		o.API = "openai"
	}
	if o.Model == "" {
		o.Model = "test-model"
	}
	srv := fakellm.New(o.ServerOptions...)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	ws := t.TempDir()
	dbPath := dir + "/state.db"
	st, err := sqlite.Open(context.Background(), dbPath, sqlite.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })

	var tools []tool.Tool
	if !o.NoBuiltins {
		tools, err = builtin.New(builtin.Options{Root: ws, ShellTimeout: 30 * time.Second})
		if err != nil {
			t.Fatalf("builtin tools: %v", err)
		}
	}
	tools = append(tools, o.ExtraTools...)

	primary := turn.Route{Provider: ProviderWith(srv, o.API, "primary", o), Model: o.Model}
	if len(o.Keys) > 0 {
		primary.Pool = failover.NewPool("primary", o.Keys, failover.StrategyFillFirst, st, nil)
	}
	routes := []turn.Route{primary}
	for i, m := range o.Fallbacks {
		name := "fallback"
		if i > 0 {
			name = "fallback" + string(rune('1'+i))
		}
		routes = append(routes, turn.Route{Provider: ProviderWith(srv, o.API, name, o), Model: m})
	}
	cfg := agent.Config{
		Store:     st,
		Tools:     tools,
		Workspace: ws,
		AdmitWait: 2 * time.Second,
		Config: turn.Config{Routes: routes, // Fast backoff keeps retry tests quick; the waiting logic itself
			// is tested in failover.
			Limits: turn.Limits{Backoff: failover.Backoff{Base: time.Millisecond, Max: 5 * time.Millisecond, RetryAfterCap: 2 * time.Second}}},
	}
	if o.Configure != nil {
		o.Configure(&cfg)
	}
	ag, err := agent.New(cfg)
	if err != nil {
		t.Fatalf("agent: %v", err)
	}
	sess, err := ag.NewSession(context.Background(), agent.SessionOptions{Title: t.Name()})
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	return &Env{T: t, Srv: srv, Store: st, DBPath: dbPath, Workspace: ws, Agent: ag, Session: sess, Config: cfg}
}

// SetRoutes replaces the agent's routes (mixed wire formats on the env's
// server), rebuilding the agent on the same store and session.
func (e *Env) SetRoutes(routes []turn.Route) {
	e.T.Helper()
	cfg := e.Config
	cfg.Routes = routes
	ag, err := agent.New(cfg)
	if err != nil {
		e.T.Fatalf("agent: %v", err)
	}
	e.Agent, e.Config = ag, cfg
}

// Run runs one turn on the env's session.
func (e *Env) Run(text string) turn.Result {
	e.T.Helper()
	return e.RunWith(context.Background(), agent.Input{Text: text})
}

// RunWith runs one turn with a context and full input.
func (e *Env) RunWith(ctx context.Context, in agent.Input) turn.Result {
	e.T.Helper()
	res, err := e.Agent.RunTurn(ctx, e.Session.ID, in)
	if err != nil {
		e.T.Fatalf("RunTurn: %v", err)
	}
	return res
}

// Rows returns the session's live rows.
func (e *Env) Rows() []store.Message {
	e.T.Helper()
	return e.RowsOf(e.Session.ID, false)
}

// RowsOf returns a session's rows, archived ones too when all is set.
func (e *Env) RowsOf(id string, all bool) []store.Message {
	e.T.Helper()
	rows, err := e.Store.Messages(context.Background(), id, store.MessageQuery{IncludeArchived: all})
	if err != nil {
		e.T.Fatalf("messages: %v", err)
	}
	return rows
}

// Roles lists the roles of rows, for compact assertions.
func Roles(rows []store.Message) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = string(r.Role)
	}
	return out
}

// NoViolations fails the test if the server saw an invalid transcript.
func (e *Env) NoViolations() {
	e.T.Helper()
	for _, v := range e.Srv.Violations() {
		e.T.Errorf("fakellm strict validation: %s", v)
	}
}
