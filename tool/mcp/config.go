// Package mcp offers the tools of Model Context Protocol servers to the
// model with the same guarantees as built-in tools: a fixed, sorted,
// byte-stable tool list per session; read-only tools run without approval
// and in parallel; every fault (a server that does not start, crashes,
// hangs or answers garbage) becomes an error result for that one call and a
// status line for the user, and the turn goes on.
//
// A Manager is started once per process and shared by sessions; each
// session takes a Session from it, which fixes the tool list it offers and
// owns the instances of servers marked per-session.
package mcp

import (
	"github.com/talaria-agent/talaria/tool/sandbox"

	"errors"
	"fmt"
	"strings"
	"time"
)

// ServerConfig describes one server: Command (+Args, Env, Dir) for a stdio
// server, or URL (+Headers, Transport) for a remote one. Any string may
// reference the environment as ${VAR}; references are expanded when the
// server starts and the values are never logged.
type ServerConfig struct {
	Name string

	Command string
	Args    []string
	Env     map[string]string
	Dir     string

	URL     string
	Headers map[string]string
	// Transport: "streamable" (default) or "sse".
	Transport string

	Disabled bool
	// Timeout bounds each call (default 60s); StartTimeout bounds start-up
	// and listing the tools (default 30s).
	Timeout      time.Duration
	StartTimeout time.Duration
	// Allow and Deny filter tools by their MCP names (shell patterns).
	Allow, Deny []string
	// AutoApprove lets tools that are not read-only run without asking.
	AutoApprove bool
	// PerSession starts an instance for each Session.
	PerSession bool
	// Sandbox confines a stdio server (nil: unconfined); EnvNames are the
	// variables of Talaria's environment it may see besides the
	// allow-list (sandbox.Env), Env being added on top.
	Sandbox  *sandbox.Policy
	EnvNames []string
}

// Kind is "stdio", "streamable" or "sse".
func (c ServerConfig) Kind() string {
	switch {
	case c.Command != "":
		return "stdio"
	case c.Transport == "sse":
		return "sse"
	}
	return "streamable"
}

func (c ServerConfig) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return 60 * time.Second
}

func (c ServerConfig) startTimeout() time.Duration {
	if c.StartTimeout > 0 {
		return c.StartTimeout
	}
	return 30 * time.Second
}

// expanded returns c with every ${VAR} replaced. A missing variable is an
// error naming it (never a value).
func (c ServerConfig) expanded(getenv func(string) string) (ServerConfig, error) {
	var errs []error
	x := func(s string) string {
		v, err := expand(s, getenv)
		if err != nil {
			errs = append(errs, err)
		}
		return v
	}
	out := c
	out.Command = x(c.Command)
	out.Dir = x(c.Dir)
	out.URL = x(c.URL)
	out.Args = make([]string, len(c.Args))
	for i, a := range c.Args {
		out.Args[i] = x(a)
	}
	out.Env = make(map[string]string, len(c.Env))
	for k, v := range c.Env {
		out.Env[k] = x(v)
	}
	out.Headers = make(map[string]string, len(c.Headers))
	for k, v := range c.Headers {
		out.Headers[k] = x(v)
	}
	return out, errors.Join(errs...)
}

// expand replaces ${NAME} with getenv(NAME); "$$" is a literal "$". A name
// that is unset (or empty) is an error, because a server started with an
// empty token fails later in a far less clear way.
func expand(s string, getenv func(string) string) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", fmt.Errorf("unclosed ${ in %q", redactRefs(s))
			}
			name := s[i+2 : i+2+end]
			v := getenv(name)
			if v == "" {
				return "", fmt.Errorf("environment variable %s is not set", name)
			}
			b.WriteString(v)
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String(), nil
}

// redactRefs is s cut at its first "$", for messages about a value that
// might hold a secret after the reference.
func redactRefs(s string) string {
	if i := strings.IndexByte(s, '$'); i >= 0 {
		return s[:i] + "$…"
	}
	return s
}
