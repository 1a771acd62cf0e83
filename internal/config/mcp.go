package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// MCPServer is one Model Context Protocol server under mcp_servers:, keyed
// by its name. It is either a stdio server (Command, Args, Env) or a remote
// one (URL, Headers). Values may reference the environment as ${VAR}, which
// is how secrets stay out of the file; references are expanded only when
// the server is started, so the expanded values never appear in the
// configuration that gets printed or logged.
type MCPServer struct {
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	// Dir is the stdio server's working directory (default: the current one).
	Dir string `yaml:"dir"`

	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`
	// Transport of a URL server: "streamable" (default, Streamable HTTP) or
	// "sse" (the older HTTP+SSE transport).
	Transport string `yaml:"transport"`

	// Enabled: false keeps the entry but does not start the server.
	Enabled *bool `yaml:"enabled"`
	// Timeout bounds each tool call (default 60s); StartTimeout bounds
	// starting the server and listing its tools (default 30s).
	Timeout      Duration `yaml:"timeout"`
	StartTimeout Duration `yaml:"start_timeout"`
	Tools        MCPTools `yaml:"tools"`
	// Approval: "ask" (default: tools not annotated read-only follow the
	// approval rules) or "auto" (they run without asking).
	Approval string `yaml:"approval"`
	// PerSession starts one instance of the server for each session instead
	// of one shared by the whole process (stdio servers with state).
	PerSession bool `yaml:"per_session"`
	// Sandbox confines a stdio server (default: workspace-write with the
	// network on), never wider than the session's sandbox.
	Sandbox *MCPSandbox `yaml:"sandbox"`
}

// MCPTools filters a server's tools by their MCP names; entries may be
// shell patterns ("read_*"). An empty Allow allows all; Deny wins.
type MCPTools struct {
	Allow []string `yaml:"allow"`
	Deny  []string `yaml:"deny"`
}

// IsEnabled reports whether the server should be started.
func (s MCPServer) IsEnabled() bool { return s.Enabled == nil || *s.Enabled }

// MCPServerNames lists the configured MCP servers, sorted.
func (c *Config) MCPServerNames() []string {
	names := make([]string, 0, len(c.MCPServers))
	for n := range c.MCPServers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// validateMCP checks the mcp_servers section.
func (c *Config) validateMCP() error {
	for _, name := range c.MCPServerNames() {
		s := c.MCPServers[name]
		at := "mcp_servers." + name
		if strings.TrimSpace(name) == "" {
			return fmt.Errorf("mcp_servers: a server has an empty name")
		}
		switch {
		case s.Command == "" && s.URL == "":
			return fmt.Errorf("%s: set command (a stdio server) or url (a remote server)", at)
		case s.Command != "" && s.URL != "":
			return fmt.Errorf("%s: set command or url, not both", at)
		}
		if s.URL != "" && !strings.Contains(s.URL, "${") {
			if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("%s.url %q is not an http(s) URL", at, s.URL)
			}
		}
		switch s.Transport {
		case "", "streamable", "sse":
		default:
			return fmt.Errorf("%s.transport is %q; use streamable or sse", at, s.Transport)
		}
		if s.Transport != "" && s.URL == "" {
			return fmt.Errorf("%s.transport applies to url servers only", at)
		}
		if s.PerSession && s.URL != "" {
			return fmt.Errorf("%s.per_session applies to stdio servers only", at)
		}
		switch s.Approval {
		case "", "ask", "auto":
		default:
			return fmt.Errorf("%s.approval is %q; use ask or auto", at, s.Approval)
		}
		if s.Timeout < 0 || s.StartTimeout < 0 {
			return fmt.Errorf("%s: timeouts cannot be negative", at)
		}
	}
	return nil
}
