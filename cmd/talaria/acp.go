package main

import (
	"context"
	"errors"
	"fmt"
	root "github.com/talaria-agent/talaria/app"
	"log/slog"
	"time"

	"github.com/talaria-agent/talaria/acp"
	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/config"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool/builtin"
	"github.com/talaria-agent/talaria/tool/mcp"
	"github.com/talaria-agent/talaria/tool/sandbox"
	"github.com/talaria-agent/talaria/turn"
)

var acpHelp = cmdHelp{
	name:  "acp",
	usage: "[flags]",
	about: `Speaks the Agent Client Protocol (JSON-RPC 2.0, one message a line) on
stdin and stdout, so an editor (Zed, JetBrains, Neovim, Emacs, VS Code) can
drive durable Talaria turns. Each ACP session works in the cwd the editor
gives it, with the MCP servers it passes next to the configured ones. Tools
that change things ask the editor (session/request_permission) unless --yes
or approvals: auto. Logs go to stderr; stdout carries the protocol only.`,
	examples: []string{
		`talaria acp`,
		`talaria acp --provider anthropic --model claude-sonnet-4-5`,
	},
}

func (c *cli) acpCmd(ctx context.Context, args []string) int {
	return c.stdioServer(ctx, acpHelp, args, c.serveACP)
}

func (c *cli) serveACP(ctx context.Context, rf *routeFlags) int {
	b, err := c.acpBase(ctx, rf)
	if err != nil {
		return c.setupExit(err)
	}
	defer b.close()
	cat := root.Catalogue(b.cfg)
	// The configured mode bounds the modes an editor may pick; a bad name
	// is reported when the first session's sandbox is built.
	top, _ := sandbox.ParseMode(acpConfiguredMode(rf.sandbox, b.cfg))
	srv := acp.NewServer(acp.Options{
		SandboxMode: string(top),
		Store:       b.store,
		Open:        func(ctx context.Context, w acp.Workspace) (*agent.Agent, func(), error) { return c.acpAgent(ctx, b, w) },
		Window:      func(model string) int64 { return int64(cat.Lookup(model).Window) },
		Version:     versionString(),
		Logger:      b.log,
	})
	if err := srv.Serve(ctx, c.stdin, c.stdout); err != nil && !errors.Is(err, context.Canceled) {
		return c.fail(exitOther, "acp: %v", err)
	}
	return exitOK
}

// acpBase is what every ACP session shares: configuration, database,
// routes and telemetry. Workspaces, tools and MCP servers are per session.
type acpBase struct {
	rf     *routeFlags
	cfg    *config.Config
	store  store.Store
	routes []turn.Route
	obs    turn.Observer
	log    *slog.Logger
	close  func()
}

func (c *cli) acpBase(ctx context.Context, rf *routeFlags) (*acpBase, error) {
	cfg, err := c.loadConfig()
	if err != nil {
		return nil, &setupError{err.Error()}
	}
	log := c.logger(cfg, rf.verbose)
	st, err := openStore(ctx, cfg, rf.database, log)
	if err != nil {
		return nil, err
	}
	o := c.options(rf, log)
	routes, err := root.Routes(cfg, o, st)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	obs, tel, err := root.Observers(ctx, cfg, o, st)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	root.ReapOrphans(log)
	return &acpBase{rf: rf, cfg: cfg, store: st, routes: routes, obs: turn.MultiObserver(obs, c.memory), log: log,
		close: func() {
			root.ShutdownTelemetry(tel, log)
			_ = st.Close()
		}}, nil
}

// acpAgent builds the agent of one ACP session: built-in tools rooted at
// the editor's cwd under the configured sandbox, the configured MCP servers
// and the editor's, and the editor as the approver.
func (c *cli) acpAgent(ctx context.Context, b *acpBase, w acp.Workspace) (*agent.Agent, func(), error) {
	cfg := b.cfg
	mode := b.rf.sandbox
	if w.Mode != "" {
		// The editor's pick, never wider than the configured mode; built
		// as if given by --sandbox so enforcement is checked the same way.
		top, err := sandbox.ParseMode(acpConfiguredMode(b.rf.sandbox, cfg))
		if err != nil {
			return nil, nil, &setupError{"sandbox: " + err.Error()}
		}
		mode = string(top.Narrower(w.Mode))
	}
	sb, err := root.SandboxPolicy(ctx, cfg, mode, w.Cwd)
	if err != nil {
		return nil, nil, err
	}
	tools, err := builtin.New(builtin.Options{Root: w.Cwd, ShellTimeout: time.Duration(cfg.ShellTimeout),
		Sandbox: sb, EnvNames: cfg.Sandbox.Env, TextReader: w.TextReader, TextWriter: w.TextWriter})
	if err != nil {
		return nil, nil, fmt.Errorf("workspace %s: %w", w.Cwd, err)
	}
	release := func() {}
	servers := root.MCPServers(cfg, sb)
	for _, s := range w.MCPServers {
		sc := mcp.ServerConfig{Name: s.Name, Command: s.Command, Args: s.Args, URL: s.URL, Dir: w.Cwd,
			Sandbox: root.MCPPolicy(sb, nil), EnvNames: cfg.Sandbox.Env}
		if s.Type == "sse" {
			sc.Transport = "sse"
		}
		if len(s.Env) > 0 {
			sc.Env = map[string]string{}
			for _, e := range s.Env {
				sc.Env[e.Name] = e.Value
			}
		}
		if len(s.Headers) > 0 {
			sc.Headers = map[string]string{}
			for _, h := range s.Headers {
				sc.Headers[h.Name] = h.Value
			}
		}
		servers = append(servers, sc)
	}
	if len(servers) > 0 {
		m, err := mcp.New(mcp.Options{Servers: servers, Getenv: c.getenv, Logger: b.log, Status: statusPrinter(c.stderr), Version: version})
		if err != nil {
			return nil, nil, err
		}
		reserved := make([]string, len(tools))
		for i, t := range tools {
			reserved[i] = t.Info().Name
		}
		// A server that fails to start costs its tools, not the session.
		msess, err := m.Session(ctx, reserved...)
		if err != nil {
			m.Close()
			return nil, nil, err
		}
		tools = append(tools, msess.Tools()...)
		release = func() {
			msess.Close()
			m.Close()
		}
	}
	ac := root.AgentConfig(cfg, b.routes, b.rf.maxIter)
	ac.Observer, ac.Store, ac.Tools, ac.Workspace, ac.Logger = b.obs, b.store, tools, w.Cwd, b.log
	ac.AdmitWait = 30 * time.Second
	if !b.rf.yes && cfg.Approvals != "auto" {
		ac.Approver = w.Approver
	}
	ac.Subagents = agent.SubagentConfig{Enabled: boolOr(cfg.Subagents.Enabled, true), MaxDepth: cfg.Subagents.MaxDepth,
		MaxParallel: cfg.Subagents.MaxParallel, MaxIterations: cfg.Subagents.MaxIterations}
	ac.Memory = root.MemoryConfig(cfg)
	ag, err := agent.New(ac)
	if err != nil {
		release()
		return nil, nil, err
	}
	return ag, release, nil
}

// acpConfiguredMode is the sandbox mode name in force: --sandbox, else the
// configuration's ("" means the default, workspace-write).
func acpConfiguredMode(flag string, cfg *config.Config) string {
	if flag != "" {
		return flag
	}
	return cfg.Sandbox.Mode
}
