package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// AgentSpec is what the gateway asks Config.NewAgent for: an agent for one
// kind of session (the exported fields), and what that agent must use for
// the gateway to serve it (the unexported ones, which AgentSpec.Apply puts
// into an agent.Config).
//
// The requirements travel with the request, rather than being written
// over a template behind the embedder's back, so that a factory sees
// everything its agents run with. They are unexported so that Apply is
// the only way to set them: all at once, never one forgotten. The gateway
// refuses an agent that does not write through its store, which is how it
// knows Apply was called.
type AgentSpec struct {
	// Workspace is the session's own workspace root; "" is the server's.
	Workspace string
	// Sandbox narrows the server's sandbox for the session's principal
	// (Limit.Sandbox and Limit.Network); the zero value is the server's.
	// A factory must never make it wider than the server's.
	Sandbox SessionSandbox
	// Provider and Model name the session's primary route; "" is the
	// default (a Model alone is the default provider's).
	Provider, Model string

	store      Store
	approver   turn.Approver
	observer   turn.Observer
	allow      func(context.Context, turn.Allowance) error
	allowModel func(ctx context.Context, provider, model string) error
	holder     string
	leaseTTL   time.Duration
}

// Apply makes c use what the gateway requires: its store (which publishes
// each committed row to the session's live streams), its approvals (none
// with Config.AutoApprove), its observer added to c's own (/metrics and
// spending limits), its per-principal spending and subagent-model checks,
// and, on a cluster, the node's lease holder and TTL.
func (s AgentSpec) Apply(c *agent.Config) {
	c.Store = s.store
	c.Approver = s.approver
	c.Observer = turn.MultiObserver(c.Observer, s.observer)
	c.Allow = s.allow
	c.AllowModel = s.allowModel
	if s.holder != "" {
		c.Holder = s.holder
	}
	if s.leaseTTL > 0 {
		c.LeaseTTL = s.leaseTTL
	}
}

// UnsupportedError is what a factory returns for a spec it does not build
// at all (a per-session workspace, a principal's own sandbox, another
// provider), as opposed to one it failed to build: the client is told 400
// not_implemented with its text, not 400 bad_request.
type UnsupportedError struct{ Msg string }

func (e *UnsupportedError) Error() string { return e.Msg }

// Template is the common factory: every agent is Agent with the spec
// applied. Its NewAgent method is a Config.NewAgent.
type Template struct {
	// Agent is the configuration of the server's own agent (routes,
	// tools, workspace, limits). Store, Approver, Allow and AllowModel
	// are the spec's (and on a cluster Holder and LeaseTTL); its Observer
	// is kept, with the gateway's added.
	Agent agent.Config
	// Tools builds the tools of a session with its own workspace or its
	// principal's sandbox (the zero SessionSandbox is the server's); it
	// must never make the sandbox wider than the server's. nil refuses
	// per-session workspaces and per-principal sandboxes.
	Tools func(workspace string, sandbox SessionSandbox) ([]tool.Tool, error)
	// Routes resolves a provider other than Agent's primary one (model ""
	// is its default); nil refuses them.
	Routes func(provider, model string) ([]turn.Route, error)
}

// NewAgent builds the agent for spec.
func (t Template) NewAgent(spec AgentSpec) (*agent.Agent, error) {
	if len(t.Agent.Routes) == 0 {
		return nil, errors.New("Template.Agent.Routes is required")
	}
	ac := t.Agent
	if spec.Workspace != "" && t.Tools == nil {
		return nil, &UnsupportedError{"this server does not allow a per-session workspace"}
	}
	if !spec.Sandbox.servers() && t.Tools == nil {
		return nil, &UnsupportedError{"this server cannot give a principal its own sandbox"}
	}
	if spec.Workspace != "" {
		ac.Workspace = spec.Workspace
	}
	if spec.Workspace != "" || !spec.Sandbox.servers() {
		tools, err := t.Tools(ac.Workspace, spec.Sandbox)
		if err != nil {
			return nil, err
		}
		ac.Tools = tools
	}
	primary := t.Agent.Routes[0]
	switch {
	case spec.Provider == "" && spec.Model == "":
	case spec.Provider == "" || spec.Provider == primary.Provider.Name():
		// The primary provider on another model keeps the fallbacks.
		ac.Routes = append([]turn.Route(nil), t.Agent.Routes...)
		if spec.Model != "" {
			ac.Routes[0].Model = spec.Model
		}
	case t.Routes == nil:
		return nil, &UnsupportedError{"this server does not allow a per-session provider"}
	default:
		r, err := t.Routes(spec.Provider, spec.Model)
		if err != nil {
			return nil, err
		}
		ac.Routes = r
	}
	spec.Apply(&ac)
	return agent.New(ac)
}
