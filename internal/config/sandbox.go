package config

import (
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/talaria-agent/talaria/tool/sandbox"
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

// Network is sandbox.network: true or false. A list of hosts would need an
// egress proxy the sandbox does not have yet, so one is refused rather than
// read as true.
type Network struct {
	Set, On bool
}

// UnmarshalYAML reads true or false; a list of hosts is an error.
func (n *Network) UnmarshalYAML(v *yaml.Node) error {
	if v.Kind == yaml.SequenceNode {
		return fmt.Errorf("line %d: sandbox network host lists are not enforced yet; use true (any host) or false (none)", v.Line)
	}
	var b bool
	if err := v.Decode(&b); err != nil {
		return fmt.Errorf("line %d: network is true or false", v.Line)
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
