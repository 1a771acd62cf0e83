package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/gateway"
	"github.com/talaria-agent/talaria/internal/config"
	"github.com/talaria-agent/talaria/internal/setting"
	"github.com/talaria-agent/talaria/observe"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/tool/builtin"
	"github.com/talaria-agent/talaria/tool/sandbox"
	"github.com/talaria-agent/talaria/turn"
)

// GatewayOptions override the configuration's serve section (the
// command's flags); zero values keep it.
type GatewayOptions struct {
	Busy               string
	MaxConcurrentTurns int
	LeaseTTL           time.Duration
}

// Gateway is a gateway built from the configuration, with the database it
// serves. Close releases what NewGateway opened; call it after Shutdown.
type Gateway struct {
	*gateway.Gateway
	Store store.Store

	closers []func()
}

// Close stops the MCP servers, the sandbox's egress proxies and telemetry,
// and closes the database.
func (g *Gateway) Close() {
	for i := len(g.closers) - 1; i >= 0; i-- {
		g.closers[i]()
	}
	g.closers = nil
}

// NewGateway opens the database and builds the HTTP service from cfg (its
// serve section), o and go: the routes, per-session tools under the
// server's sandbox narrowed per principal, the MCP servers, telemetry with
// /metrics on the same instruments, workspaces and limits. On PostgreSQL
// the gateway joins the other nodes on the database. The caller starts and
// serves it (Start, Handler) and manages the API tokens.
func NewGateway(ctx context.Context, cfg *Config, o Options, gopt GatewayOptions) (*Gateway, error) {
	o.defaults()
	st, err := OpenStore(ctx, cfg, o.Database, o.Logger)
	if err != nil {
		return nil, err
	}
	g := &Gateway{Store: st, closers: []func(){func() { _ = st.Close() }}}
	gcfg, err := g.config(ctx, cfg, o, gopt)
	if err == nil {
		if g.Gateway, err = gateway.New(gcfg); err != nil {
			err = &ConfigError{err.Error()}
		}
	}
	if err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

func (g *Gateway) config(ctx context.Context, cfg *Config, o Options, gopt GatewayOptions) (gateway.Config, error) {
	sc := cfg.Serve
	routes, err := Routes(cfg, o, g.Store)
	if err != nil {
		return gateway.Config{}, err
	}
	ws := o.Workspace
	if ws == "" {
		if ws, err = os.Getwd(); err != nil {
			return gateway.Config{}, err
		}
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return gateway.Config{}, err
	}
	sb, err := SandboxPolicy(ctx, cfg, o.Sandbox, ws)
	if err != nil {
		return gateway.Config{}, err
	}
	o.Status(SandboxLine(sb))
	g.closers = append(g.closers, WithEgress(sb, o.Logger)) // after the MCP servers and every session's tools
	ReapOrphans(o.Logger)
	if err := principalSandboxes(ctx, sb, sc.Limits); err != nil {
		return gateway.Config{}, err
	}
	toolsFor, tools, err := g.tools(ctx, cfg, o, sb, ws)
	if err != nil {
		return gateway.Config{}, err
	}
	workspaces, err := serveWorkspaces(sc.Workspaces)
	if err != nil {
		return gateway.Config{}, err
	}
	ac := AgentConfig(cfg, routes, o.MaxIterations)
	// OpenTelemetry export and the recorded timelines `talaria trace`
	// reads, as for an agent. /metrics is one more reader on the same
	// MeterProvider: the turns record once, into the instruments both the
	// collector and /metrics read.
	promReader := observe.NewPromReader()
	obs, tel, err := Observers(ctx, cfg, o, g.Store, promReader)
	if err != nil {
		return gateway.Config{}, err
	}
	g.closers = append(g.closers, func() { ShutdownTelemetry(tel, o.Logger) })
	// The gateway hands its store, approvals and observers to each agent
	// (gateway.AgentSpec); the telemetry observer is the gateway's, so it
	// sees the turns that fail before an agent runs them too.
	ac.Tools, ac.Workspace, ac.Logger = tools, ws, o.Logger
	// Memory as for an agent; each principal has its own (the agent keys
	// it by the session's principal) and writes go through approvals.
	ac.Memory = MemoryConfig(cfg)
	leaseTTL := gopt.LeaseTTL
	leaseTTL = setting.Or(leaseTTL, time.Duration(sc.LeaseTTL))
	metrics, err := gateway.SharedMetrics(promReader, tel)
	if err != nil {
		return gateway.Config{}, err
	}
	agents := gateway.Template{
		Agent: ac,
		Tools: toolsFor,
		Routes: func(provider, model string) ([]turn.Route, error) {
			r, err := ProviderRoute(cfg, o, provider, model, g.Store)
			if err != nil {
				return nil, err
			}
			return []turn.Route{r}, nil
		},
	}
	gcfg := gateway.Config{
		Store:              g.Store,
		NewAgent:           agents.NewAgent,
		Observer:           obs,
		AutoApprove:        o.AutoApprove || cfg.Approvals == "auto",
		ApprovalTimeout:    time.Duration(sc.ApprovalTimeout),
		Workspaces:         workspaces,
		LeaseTTL:           leaseTTL,
		Busy:               cmpOr(gopt.Busy, sc.Busy, gateway.BusyQueue),
		QueueLimit:         sc.QueueLimit,
		Handoff:            sc.Handoff,
		HandoffMax:         sc.HandoffMax,
		MaxConcurrentTurns: max(gopt.MaxConcurrentTurns, 0),
		MaxBodyBytes:       sc.MaxBodyBytes,
		Heartbeat:          time.Duration(sc.Heartbeat),
		AuthFailures:       sc.AuthFailures,
		ReadTimeout:        time.Duration(sc.ReadTimeout),
		Limits:             serveLimits(sc.Limits),
		MaxAgents:          sc.MaxAgents,
		MaxIdleSessions:    sc.MaxIdleSessions,
		Metrics:            metrics,
		Logger:             o.Logger,
	}
	if gcfg.MaxConcurrentTurns == 0 {
		gcfg.MaxConcurrentTurns = sc.MaxConcurrentTurns
	}
	// On PostgreSQL several serve nodes may share the database: queue,
	// leases and events go through it (see README "Scale out").
	if cl, ok := g.Store.(store.Cluster); ok {
		gcfg.Cluster = cl
	}
	return gcfg, nil
}

func cmpOr(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// tools builds the server's own tools (workspace ws) and the function that
// builds a session's: its own workspace is its sandbox's writable part,
// and its principal's sandbox narrows the server's (checked at start). The
// MCP servers' tools are shared by every session (per_session servers too,
// for now) whose sandbox is the server's.
func (g *Gateway) tools(ctx context.Context, cfg *Config, o Options, sb *sandbox.Policy, ws string) (func(string, gateway.SessionSandbox) ([]tool.Tool, error), []tool.Tool, error) {
	shellTimeout := time.Duration(cfg.ShellTimeout)
	builtins := func(dir string, ss gateway.SessionSandbox) ([]tool.Tool, error) {
		p, err := sessionPolicy(*sb, ss)
		if err != nil {
			return nil, err
		}
		p.Workspace = dir
		return builtin.New(builtin.Options{Root: dir, ShellTimeout: shellTimeout, Sandbox: &p, EnvNames: cfg.Sandbox.Env})
	}
	tools, err := builtins(ws, gateway.SessionSandbox{})
	if err != nil {
		return nil, nil, &ConfigError{fmt.Sprintf("workspace %s: %v", ws, err)}
	}
	mcpTools, closeMCP, err := withMCP(ctx, cfg, o, sb, toolNames(tools))
	if err != nil {
		return nil, nil, err
	}
	g.closers = append(g.closers, closeMCP)
	if len(mcpTools) == 0 {
		return builtins, tools, nil
	}
	toolsFor := func(dir string, ss gateway.SessionSandbox) ([]tool.Tool, error) {
		t, err := builtins(dir, ss)
		if m, _ := sandbox.ParseMode(ss.Mode); (ss.Mode != "" && m.Narrower(sb.Mode) != sb.Mode) || ss.Network != nil {
			// The MCP servers run under the server's sandbox, wider
			// than this principal's: it does not get their tools.
			return t, err
		}
		return append(t, mcpTools...), err
	}
	return toolsFor, append(tools, mcpTools...), nil
}

// serveWorkspaces checks serve.workspaces: every root an existing
// directory, named by a plain name.
func serveWorkspaces(in map[string]config.ServeWorkspace) (map[string]gateway.Workspace, error) {
	out := map[string]gateway.Workspace{}
	for name, w := range in {
		if strings.TrimSpace(name) == "" || strings.ContainsAny(name, "/\\") {
			return nil, &ConfigError{fmt.Sprintf("serve.workspaces: %q is not a name (no slashes, not empty)", name)}
		}
		if name == gateway.DefaultWorkspace && w.Path != "" {
			return nil, &ConfigError{"serve.workspaces.default is the server's own workspace (--workspace); give it principals only"}
		}
		root := ""
		if name != gateway.DefaultWorkspace {
			abs, err := filepath.Abs(w.Path)
			if err != nil || w.Path == "" {
				return nil, &ConfigError{fmt.Sprintf("serve.workspaces.%s: path is required", name)}
			}
			if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
				return nil, &ConfigError{fmt.Sprintf("serve.workspaces.%s: %s is not a directory", name, abs)}
			}
			root = abs
		}
		for _, p := range w.Principals {
			if strings.TrimSpace(p) == "" {
				return nil, &ConfigError{fmt.Sprintf("serve.workspaces.%s: an empty principal", name)}
			}
		}
		out[name] = gateway.Workspace{Root: root, Principals: w.Principals}
	}
	return out, nil
}

// serveLimits translates serve.limits.
func serveLimits(l config.ServeLimits) gateway.Limits {
	one := func(c config.ServeLimit) gateway.Limit {
		return gateway.Limit{Turns: c.Turns, Queued: c.Queued, Sessions: c.Sessions, Streams: c.Streams,
			RequestsPerSecond: c.RequestsPerSecond, Burst: c.Burst, Searches: c.Searches,
			SpendUSDPerDay: c.SpendUSDPerDay, Models: c.Models, Sandbox: c.Sandbox, Network: principalNetwork(c.Network),
			Handoff: c.Handoff, HandoffMax: c.HandoffMax}
	}
	out := gateway.Limits{Default: one(l.Default)}
	if len(l.Principals) > 0 {
		out.Principals = map[string]gateway.Limit{}
		for name, c := range l.Principals {
			out.Principals[name] = one(c)
		}
	}
	return out
}
