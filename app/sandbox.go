package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/talaria-agent/talaria/gateway"
	"github.com/talaria-agent/talaria/internal/config"
	"github.com/talaria-agent/talaria/tool/sandbox"
	"github.com/talaria-agent/talaria/tool/sandbox/egress"
)

// SandboxPolicy builds the policy of an agent or gateway from the config
// and an override (flagMode, "" for the config's), for workspace ws. A
// confined mode nothing on this machine can enforce is a setup error: the
// operator must install bubblewrap or choose off explicitly.
func SandboxPolicy(ctx context.Context, cfg *Config, flagMode, ws string) (*sandbox.Policy, error) {
	name := cfg.Sandbox.Mode
	if flagMode != "" {
		name = flagMode
	}
	mode, err := sandbox.ParseMode(name)
	if err != nil {
		return nil, &ConfigError{"sandbox: " + err.Error()}
	}
	// Talaria's home holds the database and the configuration; a command
	// has no business reading either.
	p := &sandbox.Policy{Mode: mode, Network: cfg.Sandbox.Network.On && mode != sandbox.ReadOnly, Workspace: ws,
		Hide: []string{cfg.Home}}
	if mode != sandbox.ReadOnly {
		p.Hosts = cfg.Sandbox.Network.Hosts
	}
	if mode == sandbox.Off && len(cfg.MCPServers) == 0 {
		return p, nil
	}
	// MCP servers default to workspace-write even when the session is off.
	p.Mechanism = sandbox.Detect(ctx)
	if mode != sandbox.Off && !p.Mechanism.Enforced() {
		return nil, &ConfigError{fmt.Sprintf("sandbox mode %s cannot be enforced here: %s; "+
			"install bubblewrap, or run without a sandbox by choosing it explicitly (--sandbox off or sandbox.mode: off)",
			mode, p.Mechanism.Why)}
	}
	return p, nil
}

// SandboxLine is the start-up line naming the sandbox in force.
func SandboxLine(p *sandbox.Policy) string {
	if p.Mode == sandbox.Off {
		return "warning: sandbox off: shell commands and MCP servers run unconfined, with all of your access"
	}
	return "sandbox: " + p.String()
}

// ConfigPolicy is the config's sandbox for the current directory, for
// commands that start MCP servers outside a session (mcp list, mcp test,
// doctor); a mode that cannot be enforced keeps no mechanism, so confined
// servers fail to start saying why.
func ConfigPolicy(ctx context.Context, cfg *Config) *sandbox.Policy {
	mode, err := sandbox.ParseMode(cfg.Sandbox.Mode)
	if err != nil {
		mode = sandbox.ReadOnly
	}
	ws, _ := os.Getwd()
	return &sandbox.Policy{Mode: mode, Network: cfg.Sandbox.Network.On, Hosts: cfg.Sandbox.Network.Hosts, Workspace: ws,
		Hide: []string{cfg.Home}, Mechanism: sandbox.Detect(ctx)}
}

// MCPPolicy is one stdio server's sandbox: the mode its config names
// (default workspace-write), never wider than the session's, with the
// network its config allows (default on: most servers need it). Nothing a
// model says reaches this.
func MCPPolicy(sess *sandbox.Policy, s *config.MCPSandbox) *sandbox.Policy {
	mode, net := sandbox.WorkspaceWrite, true
	var hosts []string
	if s != nil {
		if m, err := sandbox.ParseMode(s.Mode); err == nil {
			mode = m
		}
		if s.Network.Set {
			net, hosts = s.Network.On, s.Network.Hosts
		}
	}
	p := *sess
	p.Mode = sess.Mode.Narrower(mode)
	p.Network = net && p.Mode != sandbox.ReadOnly
	p.Hosts = nil
	if p.Mode != sandbox.ReadOnly {
		p.Hosts = hosts
	}
	return &p
}

// WithEgress gives p the egress proxies its host lists (and its MCP
// servers') need, started on first use; call the returned func when the
// command ends. The relay inside the sandbox is this binary (see
// egress.RelayMain and sandbox.RelayCommand: a program that embeds app
// and wants host lists calls RelayMain the way cmd/talaria does).
func WithEgress(p *sandbox.Policy, log *slog.Logger) (closeEgress func()) {
	pool := egress.NewPool(SelfPath(), log)
	p.Egress = pool
	return func() { _ = pool.Close() }
}

// SelfPath is this binary, resolved before bwrap binds it into the
// sandbox as the relay; "" if unknown (a host list then fails saying so).
func SelfPath() string {
	p, err := os.Executable()
	if err == nil {
		p, err = filepath.EvalSymlinks(p)
	}
	if err != nil {
		return ""
	}
	return p
}

// ReapOrphans kills what the shell commands of a Talaria process that died
// without cleaning up (kill -9, a crash, power to the container cut) left
// running, found by their process groups' cgroups.
func ReapOrphans(log *slog.Logger) {
	if n := sandbox.ReapOrphans(); n > 0 {
		log.Warn("killed processes left by a Talaria process that died", "processes", n)
	}
}

// principalNetwork is serve.limits.*.network as gateway.Limit.Network:
// nil (unset or true) keeps the server's, false is an empty list.
func principalNetwork(n *config.Network) []string {
	switch {
	case n == nil || !n.Set || n.On:
		return nil
	case n.Hosts == nil:
		return []string{}
	}
	return n.Hosts
}

// sessionPolicy is the server's policy narrowed by a principal's mode
// and network; an error says why the narrowing cannot be enforced.
func sessionPolicy(p sandbox.Policy, ss gateway.SessionSandbox) (sandbox.Policy, error) {
	if ss.Mode != "" {
		m, err := sandbox.ParseMode(ss.Mode)
		if err != nil {
			return p, err
		}
		p = p.Narrow(m, true)
		p.Network = p.Network && p.Mode != sandbox.ReadOnly
	}
	if ss.Network != nil {
		return p.NarrowHosts(ss.Network)
	}
	return p, nil
}

// principalSandboxes checks the per-principal sandbox modes of serve
// (serve.limits.*.sandbox) at start: each must be a mode, and a confined
// one must be enforceable here even when the server's own mode is off.
// A mode wider than the server's is narrowed to it when tools are built.
func principalSandboxes(ctx context.Context, sb *sandbox.Policy, l config.ServeLimits) error {
	names := map[string]string{"default": l.Default.Sandbox}
	for name, p := range l.Principals {
		names[name] = p.Sandbox
	}
	for name, mode := range names {
		if mode == "" {
			continue
		}
		m, err := sandbox.ParseMode(mode)
		if err != nil {
			return &ConfigError{fmt.Sprintf("serve.limits: %s: sandbox: %v", name, err)}
		}
		if sb.Mode.Narrower(m) == sandbox.Off || sb.Mechanism.Enforced() {
			continue
		}
		if sb.Mechanism = sandbox.Detect(ctx); !sb.Mechanism.Enforced() {
			return &ConfigError{fmt.Sprintf("serve.limits: %s: sandbox mode %s cannot be enforced here: %s; install bubblewrap",
				name, m, sb.Mechanism.Why)}
		}
	}
	// A principal's host list must be one the server's sandbox allows.
	check := func(name string, lim config.ServeLimit) error {
		// A principal's unset fields are the default's, as in the gateway.
		if lim.Sandbox == "" {
			lim.Sandbox = l.Default.Sandbox
		}
		if lim.Network == nil {
			lim.Network = l.Default.Network
		}
		ss := gateway.SessionSandbox{Mode: lim.Sandbox, Network: principalNetwork(lim.Network)}
		if _, err := sessionPolicy(*sb, ss); err != nil {
			return &ConfigError{fmt.Sprintf("serve.limits: %s: network: %v", name, err)}
		}
		return nil
	}
	if err := check("default", l.Default); err != nil {
		return err
	}
	for name, lim := range l.Principals {
		if err := check(name, lim); err != nil {
			return err
		}
	}
	return nil
}
