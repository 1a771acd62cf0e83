package app

import (
	"context"
	"time"

	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/tool/mcp"
	"github.com/talaria-agent/talaria/tool/sandbox"
	"github.com/talaria-agent/talaria/tool/sandbox/egress"
)

// MCPServers maps the config file's mcp_servers (only the one named
// first in only, when given) onto the manager's configuration (${VAR}
// references stay unexpanded until start); each stdio server runs under
// its own sandbox (MCPPolicy).
func MCPServers(cfg *Config, sess *sandbox.Policy, only ...string) []mcp.ServerConfig {
	var out []mcp.ServerConfig
	for _, name := range cfg.MCPServerNames() {
		if len(only) > 0 && name != only[0] {
			continue
		}
		s := cfg.MCPServers[name]
		out = append(out, mcp.ServerConfig{
			Name: name, Command: s.Command, Args: s.Args, Env: s.Env, Dir: s.Dir,
			URL: s.URL, Headers: s.Headers, Transport: s.Transport,
			Disabled: !s.IsEnabled(), Timeout: time.Duration(s.Timeout), StartTimeout: time.Duration(s.StartTimeout),
			Allow: s.Tools.Allow, Deny: s.Tools.Deny, AutoApprove: s.Approval == "auto", PerSession: s.PerSession,
			Sandbox: MCPPolicy(sess, s.Sandbox), EnvNames: cfg.Sandbox.Env,
		})
	}
	return out
}

// NewMCP builds the process's MCP manager; status lines go to o.Status.
// sess is the session's sandbox (nil: the config's, for the current
// directory, with egress proxies that live as long as the process).
func NewMCP(ctx context.Context, cfg *Config, o Options, sess *sandbox.Policy, only ...string) (*mcp.Manager, error) {
	o.defaults()
	if sess == nil {
		sess = ConfigPolicy(ctx, cfg)
		sess.Egress = egress.NewPool(SelfPath(), o.Logger)
	}
	m, err := mcp.New(mcp.Options{
		Servers: MCPServers(cfg, sess, only...), Getenv: o.Getenv, Logger: o.Logger, Status: o.Status, Version: o.Version,
	})
	if err != nil {
		return nil, &ConfigError{err.Error()}
	}
	return m, nil
}

// withMCP starts the configured MCP servers for one set of tools: the
// manager and its session's tools, offered after reserved (the built-ins'
// names, which a server's tool may not take). A server that fails to start
// costs its tools, not the agent. close stops them (stdio servers and their
// process groups).
func withMCP(ctx context.Context, cfg *Config, o Options, sb *sandbox.Policy, reserved []string) (tools []tool.Tool, close func(), err error) {
	if len(cfg.MCPServers) == 0 {
		return nil, func() {}, nil
	}
	m, err := NewMCP(ctx, cfg, o, sb)
	if err != nil {
		return nil, nil, err
	}
	s, err := m.Session(ctx, reserved...)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return s.Tools(), func() {
		s.Close()
		m.Close()
	}, nil
}
