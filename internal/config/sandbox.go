package config

import (
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/talaria-agent/talaria/tool/sandbox"
	"github.com/talaria-agent/talaria/tool/sandbox/egress"
)

// Sandbox confines the shell tool's commands and the file tools
// (sandbox: in config.yaml; --sandbox overrides the mode).
type Sandbox struct {
	// Mode: read-only, workspace-write (default) or off.
	Mode string `yaml:"mode"`
	// Network lets commands reach the network (default false).
	Network Network `yaml:"network"`
	// Env names more variables of Talaria's environment that tools may
	// see, besides PATH, HOME, LANG, LC_*, TERM, TMPDIR, USER, SHELL,
	// LOGNAME and TZ; never keys, tokens, TALARIA_* or OTEL_*.
	Env []string `yaml:"env"`
}

// MCPSandbox is one MCP server's confinement (mcp_servers.NAME.sandbox),
// never wider than the session's: mode (default workspace-write) and
// network (default true: most servers need it).
type MCPSandbox struct {
	Mode    string  `yaml:"mode"`
	Network Network `yaml:"network"`
}

// Network is sandbox.network: true (any host), false (none), or a list
// of hosts ("proxy.golang.org", "*.github.com", "10.0.0.5:8080") reached
// only through Talaria's egress proxy, the sandbox having no other route.
type Network struct {
	Set, On bool
	// Hosts is the list, when network is one (On is then false).
	Hosts []string
}

// UnmarshalYAML reads true, false or a list of hosts; a list is checked
// here, so a typo fails at load, not at the first command.
func (n *Network) UnmarshalYAML(v *yaml.Node) error {
	if v.Kind == yaml.SequenceNode {
		var hosts []string
		if err := v.Decode(&hosts); err != nil {
			return fmt.Errorf("line %d: network is true, false or a list of hosts", v.Line)
		}
		if _, err := egress.Parse(hosts); err != nil {
			return fmt.Errorf("line %d: network: %w", v.Line, err)
		}
		n.Set, n.On, n.Hosts = true, false, hosts
		return nil
	}
	var b bool
	if err := v.Decode(&b); err != nil {
		return fmt.Errorf("line %d: network is true, false or a list of hosts", v.Line)
	}
	n.Set, n.On = true, b
	return nil
}

// validateSandbox checks the sandbox section and the MCP servers' modes.
func (c *Config) validateSandbox() error {
	if _, err := sandbox.ParseMode(c.Sandbox.Mode); err != nil {
		return fmt.Errorf("sandbox.mode: %w", err)
	}
	for _, n := range c.Sandbox.Env {
		if err := sandbox.CheckEnvName(n); err != nil {
			return fmt.Errorf("sandbox.env: %w", err)
		}
	}
	for _, name := range c.MCPServerNames() {
		s := c.MCPServers[name]
		if s.Sandbox == nil {
			continue
		}
		if _, err := sandbox.ParseMode(s.Sandbox.Mode); err != nil {
			return fmt.Errorf("mcp_servers.%s.sandbox.mode: %w", name, err)
		}
	}
	return nil
}
