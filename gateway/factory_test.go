package gateway

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// builds records what a gateway asked its factory for.
type builds struct {
	mu    sync.Mutex
	specs []AgentSpec
	count map[agentKey]int
}

func (b *builds) wrap(next func(AgentSpec) (*agent.Agent, error)) func(AgentSpec) (*agent.Agent, error) {
	return func(s AgentSpec) (*agent.Agent, error) {
		b.mu.Lock()
		b.specs = append(b.specs, s)
		if b.count == nil {
			b.count = map[agentKey]int{}
		}
		b.count[agentKey{s.Workspace, s.Provider, s.Model, s.Sandbox.key()}]++
		b.mu.Unlock()
		return next(s)
	}
}

// TestFactoryGetsWhatTheGatewayRequires: every agent, whatever its
// workspace, sandbox or provider, is asked for with the gateway's store,
// approvals and hooks in the spec (Apply puts them into the agent's
// configuration), and is built once per kind.
func TestFactoryGetsWhatTheGatewayRequires(t *testing.T) {
	var base agent.Config
	shared := t.TempDir()
	b := &builds{}
	h := newHarness(t, harnessOptions{
		envOpts: testenv.Options{Fallbacks: []string{"other-default"}, Configure: func(c *agent.Config) { base = *c }},
		configure: func(c *Config) {
			c.Workspaces = map[string]Workspace{"shared": {Root: shared}}
			c.Limits.Principals = map[string]Limit{"bob": {Sandbox: "read-only"}}
			c.NewAgent = b.wrap(Template{
				Agent: base,
				Tools: func(string, SessionSandbox) ([]tool.Tool, error) { return nil, nil },
				Routes: func(provider, model string) ([]turn.Route, error) {
					if provider != "fallback" {
						return nil, errors.New("no such provider")
					}
					r := base.Routes[1]
					if model != "" {
						r.Model = model
					}
					return []turn.Route{r}, nil
				},
			}.NewAgent)
		},
	})
	create := func(token string, body map[string]any) map[string]any {
		t.Helper()
		code, out := h.do("POST", "/v1/sessions", token, body)
		if code != 201 {
			t.Fatalf("create %v = %d %v", body, code, out)
		}
		return out
	}
	for range 2 {
		create(h.token, nil)
		if out := create(h.token, map[string]any{"workspace": "shared"}); out["workspace"] != "shared" {
			t.Errorf("workspace = %v, want shared", out["workspace"])
		}
		if out := create(h.token, map[string]any{"provider": "fallback"}); out["provider"] != "fallback" || out["model"] != "other-default" {
			t.Errorf("provider/model = %v/%v, want fallback/other-default", out["provider"], out["model"])
		}
		create(h.other, nil)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	want := map[agentKey]int{
		{}:                     1, // the server's, at New
		{workspace: shared}:    1,
		{provider: "fallback"}: 1,
		{sandbox: "read-only"}: 1,
		{workspace: h.g.home}:  0, // the server's workspace is the server's agent
		{provider: "fallback", model: "other-default"}: 0,
	}
	for k, n := range want {
		if b.count[k] != n {
			t.Errorf("built %+v %d times, want %d (all: %v)", k, b.count[k], n, b.count)
		}
	}
	for _, s := range b.specs {
		var ac agent.Config
		s.Apply(&ac)
		if ac.Store != store.SessionService(h.g.obs) || ac.Approver != turn.Approver(h.g) || ac.Allow == nil || ac.AllowModel == nil || ac.Observer == nil {
			t.Errorf("spec %+v applies store %T, approver %T, allow %v, allow model %v, observer %v: want the gateway's",
				s, ac.Store, ac.Approver, ac.Allow != nil, ac.AllowModel != nil, ac.Observer != nil)
		}
	}
}

// TestFactoryWithoutApplyIsRefused: an agent that does not use the spec
// would bypass the gateway's streams, approvals and limits.
func TestFactoryWithoutApplyIsRefused(t *testing.T) {
	env := testenv.New(t, testenv.Options{NoBuiltins: true})
	_, err := New(Config{Store: env.Store, NewAgent: func(AgentSpec) (*agent.Agent, error) { return agent.New(env.Config) }})
	if err == nil || !strings.Contains(err.Error(), "AgentSpec.Apply") {
		t.Fatalf("New with a factory that ignores its spec: %v", err)
	}
	// One that forgets it for some sessions only is refused for those.
	g, err := New(Config{Store: env.Store, NewAgent: func(s AgentSpec) (*agent.Agent, error) {
		ac := env.Config
		if s.Workspace == "" {
			s.Apply(&ac)
		}
		return agent.New(ac)
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.agentFor("alice", t.TempDir(), "", "")
	if e, ok := errors.AsType[*apiError](err); !ok || e.Code != api.CodeBadRequest || !strings.Contains(e.Message, "AgentSpec.Apply") {
		t.Fatalf("a workspace's agent built without the spec: %v", err)
	}
}

// TestFactoryAutoApprove: with AutoApprove the spec takes approvals away,
// even from a template that has an approver; the embedder's observer is
// kept, with the gateway's added.
func TestFactoryAutoApprove(t *testing.T) {
	env := testenv.New(t, testenv.Options{NoBuiltins: true})
	var seen AgentSpec
	base := env.Config
	base.Approver = refuseAll{}
	base.Observer = nopObserver{}
	g, err := New(Config{Store: env.Store, AutoApprove: true, NewAgent: func(s AgentSpec) (*agent.Agent, error) {
		seen = s
		return Template{Agent: base}.NewAgent(s)
	}})
	if err != nil {
		t.Fatal(err)
	}
	ac := base
	seen.Apply(&ac)
	if ac.Approver != nil || ac.Store != store.SessionService(g.obs) {
		t.Errorf("AutoApprove: approver %T, store %T; want none and the gateway's", ac.Approver, ac.Store)
	}
	if _, alone := ac.Observer.(nopObserver); alone || ac.Observer == nil {
		t.Errorf("observer %T: want the template's and the gateway's", ac.Observer)
	}
}

// TestTemplateRefusals: a Template without Tools cannot serve workspaces
// (New says so) nor per-principal sandboxes, without Routes no other
// provider; each is an UnsupportedError (400 not_implemented).
func TestTemplateRefusals(t *testing.T) {
	env := testenv.New(t, testenv.Options{NoBuiltins: true})
	_, err := New(Config{Store: env.Store, NewAgent: Template{Agent: env.Config}.NewAgent,
		Workspaces: map[string]Workspace{"shared": {Root: t.TempDir()}}})
	var u *UnsupportedError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "Config.Workspaces") {
		t.Errorf("New with workspaces and no Tools: %v", err)
	}
	tpl := Template{Agent: env.Config}
	for _, s := range []AgentSpec{{Workspace: t.TempDir()}, {Sandbox: SessionSandbox{Mode: "read-only"}}, {Provider: "elsewhere"}} {
		if _, err := tpl.NewAgent(s); !errors.As(err, &u) {
			t.Errorf("Template.NewAgent(%+v) = %v, want an UnsupportedError", s, err)
		}
	}
}

type refuseAll struct{}

func (refuseAll) Approve(context.Context, llm.ToolCall, tool.Info) (bool, string) { return false, "no" }

type nopObserver struct{}

func (nopObserver) StartTurn(context.Context, turn.TurnInfo) turn.TurnObserver { return nil }
