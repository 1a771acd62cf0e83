package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/internal/project"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/tool/builtin"
	"github.com/talaria-agent/talaria/tool/sandbox"
	"github.com/talaria-agent/talaria/turn"
)

// Agent is an agent built from the configuration, with what it runs on.
// Close releases all of it.
type Agent struct {
	*agent.Agent
	// Store is the opened database; Routes the primary route and the
	// fallback chain; Logger the log o.Logger named.
	Store  store.Store
	Routes []turn.Route
	Logger *slog.Logger
	// Sandbox is the policy the shell and MCP servers run under.
	Sandbox *sandbox.Policy

	closers []func()
}

// Close stops the agent's background work, then its MCP servers, the
// sandbox's egress proxies, telemetry (delivering what is buffered) and
// the database.
func (a *Agent) Close() {
	if a.Agent != nil {
		a.Agent.Close() // stops background reviews before the tools and the store close
	}
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
}

// NewAgent opens the database and builds an agent from cfg and o: routes,
// the built-in tools rooted at the workspace under the sandbox, the MCP
// servers' tools, telemetry and the recorded timeline, AGENTS.md in new
// sessions' prompt, subagents, memory and review. On error everything
// opened is closed again.
func NewAgent(ctx context.Context, cfg *Config, o Options) (*Agent, error) {
	o.defaults()
	st, err := OpenStore(ctx, cfg, o.Database, o.Logger)
	if err != nil {
		return nil, err
	}
	a := &Agent{Store: st, Logger: o.Logger, closers: []func(){func() { _ = st.Close() }}}
	if err := a.build(ctx, cfg, o); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

func (a *Agent) build(ctx context.Context, cfg *Config, o Options) error {
	routes, err := Routes(cfg, o, a.Store)
	if err != nil {
		return err
	}
	a.Routes = routes
	ws, cwd, err := WorkspaceDir(o.Workspace)
	if err != nil {
		return err
	}
	sb, err := SandboxPolicy(ctx, cfg, o.Sandbox, ws)
	if err != nil {
		return err
	}
	a.Sandbox = sb
	a.closers = append(a.closers, WithEgress(sb, o.Logger))
	if !o.Quiet || sb.Mode == sandbox.Off {
		o.Status(SandboxLine(sb))
	}
	ReapOrphans(o.Logger)
	tools, err := builtin.New(builtin.Options{Root: ws, ShellTimeout: time.Duration(cfg.ShellTimeout),
		Sandbox: sb, EnvNames: cfg.Sandbox.Env})
	if err != nil {
		return &ConfigError{fmt.Sprintf("workspace %s: %v", ws, err)}
	}
	mcpTools, closeMCP, err := withMCP(ctx, cfg, o, sb, toolNames(tools))
	if err != nil {
		return err
	}
	a.closers = append(a.closers, closeMCP)
	tools = append(tools, mcpTools...)
	ac := AgentConfig(cfg, routes, o.MaxIterations)
	obs, tel, err := Observers(ctx, cfg, o, a.Store)
	if err != nil {
		return err
	}
	// Telemetry is shut down first: spans of the last turn are delivered
	// before anything else closes.
	a.closers = append(a.closers, func() { ShutdownTelemetry(tel, o.Logger) })
	ac.Observer = turn.MultiObserver(obs, o.Observer)
	if !o.AutoApprove && cfg.Approvals != "auto" {
		ac.Approver = o.Approver
	}
	ac.Store, ac.Tools, ac.Workspace, ac.AdmitWait, ac.Logger = a.Store, tools, ws, o.AdmitWait, o.Logger
	// AGENTS.md goes into new sessions' fixed prompt only: a session
	// continued later keeps the bytes it started with (prompt cache).
	if p := project.Prompt(ws, cwd); p != "" {
		ac.SystemPromptExtra = strings.TrimSpace(strings.TrimSpace(ac.SystemPromptExtra) + "\n\n" + p)
	}
	ac.Subagents = agent.SubagentConfig{Enabled: boolOr(cfg.Subagents.Enabled, true), MaxDepth: cfg.Subagents.MaxDepth,
		MaxParallel: cfg.Subagents.MaxParallel, MaxIterations: cfg.Subagents.MaxIterations}
	ac.Memory = MemoryConfig(cfg)
	ac.Review = agent.ReviewConfig{Enabled: cfg.Review.Enabled, Idle: time.Duration(cfg.Review.Idle),
		MaxIterations: cfg.Review.MaxIterations}
	ag, err := agent.New(ac)
	if err != nil {
		return err
	}
	a.Agent = ag
	return nil
}

func toolNames(tools []tool.Tool) []string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Info().Name
	}
	return names
}

// WorkspaceDir is the workspace: dir, else the project root above the
// current directory (the nearest directory up holding .git, else go.mod or
// AGENTS.md, else the current one); cwd is the current directory, where
// the AGENTS.md files stop.
func WorkspaceDir(dir string) (ws, cwd string, err error) {
	if cwd, err = os.Getwd(); err != nil {
		return "", "", err
	}
	if dir == "" {
		return project.Root(cwd), cwd, nil
	}
	ws, err = filepath.Abs(dir)
	return ws, cwd, err
}

// MemoryConfig is the configuration's memory section.
func MemoryConfig(cfg *Config) agent.MemoryConfig {
	return agent.MemoryConfig{Enabled: boolOr(cfg.Memory.Enabled, true), User: cfg.Memory.User, MaxTokens: cfg.Memory.MaxTokens}
}

// AgentConfig maps the configuration (and maxIterations, when positive)
// onto the settings every agent shares: routes, limits, guards,
// compression, prompts. Unset limits stay zero: the packages that own them
// apply their defaults. Store, tools, workspace and observers are the
// caller's.
func AgentConfig(cfg *Config, routes []turn.Route, maxIterations int) agent.Config {
	g := turn.GuardConfig{
		NoIdenticalCalls:      !boolOr(cfg.Guards.IdenticalCalls, true),
		NoSaidButStopped:      !boolOr(cfg.Guards.SaidButStopped, true),
		NoEmptyResponse:       !boolOr(cfg.Guards.EmptyResponse, true),
		ToolLoopStop:          cfg.Guards.ToolLoopStop,
		EmptyRetries:          emptyRetries(cfg.Guards.EmptyRetries),
		NoEmptyRetry:          cfg.Guards.EmptyRetries != nil && *cfg.Guards.EmptyRetries == 0,
		EmptyCostThresholdUSD: cfg.Guards.EmptyCostThresholdUSD,
	}
	ac := agent.Config{
		// compression.rotate: continue compressed sessions in a child.
		RotateOnCompression: cfg.Compression.Rotate && !cfg.Compression.Disabled,
		SystemPrompt:        cfg.SystemPrompt,
		SystemPromptExtra:   cfg.SystemPromptExtra,
		Config: turn.Config{Routes: routes, Catalogue: Catalogue(cfg), Limits: turn.Limits{MaxIterations: cfg.MaxIterations, MaxRetries: emptyRetries(cfg.MaxRetries),
			NoRetries: cfg.MaxRetries != nil && *cfg.MaxRetries == 0,
			MaxTokens: cfg.MaxTokens}, Guards: g, Threshold: compact.Threshold{Ratio: cfg.Compression.Threshold, Tokens: cfg.Compression.ThresholdTokens}, CompressAttempts: cfg.Compression.Attempts, PressureRatio: cfg.Compression.WarnRatio, PromptCache: boolOr(cfg.PromptCache, true)},
	}
	if maxIterations > 0 {
		ac.Limits.MaxIterations = maxIterations
	}
	if !cfg.Compression.Disabled {
		model := cfg.Compression.Model
		if model == "" {
			model = routes[0].Model
		}
		ac.Compressor = &compact.Compressor{
			Summarizer:      routes[0].Provider,
			Model:           model,
			Timeout:         time.Duration(cfg.Compression.Timeout),
			MinTailMessages: cfg.Compression.TailMessages,
			OnFailure:       compact.FailureMode(cfg.Compression.OnFailure),
		}
	}
	return ac
}

// emptyRetries passes a set count through; 0 travels as a No… switch,
// since the engine's zero means its default.
func emptyRetries(n *int) int {
	if n == nil {
		return 0
	}
	return *n
}
