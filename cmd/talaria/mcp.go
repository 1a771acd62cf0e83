package main

import (
	"context"
	"encoding/json"
	"fmt"
	root "github.com/talaria-agent/talaria/app"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/talaria-agent/talaria/internal/config"
	"github.com/talaria-agent/talaria/tool/mcp"
	"github.com/talaria-agent/talaria/tool/sandbox"
)

const mcpUsage = `Commands:
  talaria mcp list [--json]   start every configured MCP server, list its state and tools
  talaria mcp test NAME       start one server, list its tools, print timings
  talaria mcp serve           serve Talaria itself as an MCP server on stdio (run_turn, list_sessions, get_session)

Servers are configured under mcp_servers: in the config file. Tool lists are
read when a session starts; a server that changes its tools takes effect at
the next session.

Exit codes: 0 all servers ready, 1 a server failed, 2 usage or config error.

'talaria mcp COMMAND --help' shows one command's flags and examples.`

var mcpHelp = cmdHelp{
	name:     "mcp",
	usage:    "list|test|serve ...",
	about:    mcpUsage,
	examples: []string{"talaria mcp list", "talaria mcp test github"},
}

var mcpListHelp = cmdHelp{
	name:  "mcp list",
	usage: "[--json]",
	about: `Starts every configured MCP server (mcp_servers: in the config file) and
lists its state and tools, and the tools left out and why.

Exit codes: 0 all servers ready, 1 a server failed, 2 usage or config error.`,
	examples: []string{"talaria mcp list", "talaria mcp list --json | jq '.[] | {name, state}'"},
}

var mcpTestHelp = cmdHelp{
	name:  "mcp test",
	usage: "NAME",
	about: `Starts one configured MCP server (even a disabled one), lists its tools and
prints how long starting, listing and shutting down took.

Exit codes: 0 the server is ready, 1 it failed, 2 usage or config error.`,
	examples: []string{"talaria mcp test github"},
}

func (c *cli) mcpCmd(ctx context.Context, args []string) int {
	if code, done := c.subcommandHead(args, mcpHelp, "list, test or serve"); done {
		return code
	}
	switch args[0] {
	case "list":
		return c.mcpList(ctx, args[1:])
	case "test":
		return c.mcpTest(ctx, args[1:])
	case "serve":
		return c.mcpServe(ctx, args[1:])
	}
	return c.usageError(mcpHelp, "unknown mcp command %q; use list, test or serve", args[0])
}

// newMCP builds the process's MCP manager (app.NewMCP); status lines go
// to status. sess is the session's sandbox (nil: the config's, for the
// current directory, as mcp list and test use).
func (c *cli) newMCP(ctx context.Context, cfg *config.Config, log *slog.Logger, status func(string), sess *sandbox.Policy, only ...string) (*mcp.Manager, error) {
	return root.NewMCP(ctx, cfg, root.Options{Getenv: c.getenv, Logger: log, Status: status, Version: version}, sess, only...)
}

// statusPrinter prints status lines to w, one at a time.
func statusPrinter(w io.Writer) func(string) {
	var mu sync.Mutex
	return func(line string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(w, "· "+line)
	}
}

func (c *cli) mcpList(ctx context.Context, args []string) int {
	h := mcpListHelp
	fs := h.flags()
	jsonOut := fs.Bool("json", false, "print a JSON list of {name, state, error, tools: [{name, model_name, read_only}]}")
	if code, done := c.parseFlags(fs, h, args); done {
		return code
	}
	if fs.NArg() > 0 {
		return c.usageError(h, "takes no arguments (got %q; talaria mcp test NAME tests one server)", fs.Arg(0))
	}
	cfg, err := c.loadConfig()
	if err != nil {
		return c.fail(exitUsage, "%v", err)
	}
	if len(cfg.MCPServers) == 0 {
		if *jsonOut {
			fmt.Fprintln(c.stdout, "[]")
			return exitOK
		}
		fmt.Fprintf(c.stdout, "no MCP servers configured (add mcp_servers: to %s)\n", root.ConfigPath(cfg))
		return exitOK
	}
	// Failures are part of the listing, so status lines are not printed.
	m, err := c.newMCP(ctx, cfg, c.logger(cfg, false), nil, nil)
	if err != nil {
		return c.setupExit(err)
	}
	defer m.Close()
	sess, err := m.Session(ctx)
	if err != nil {
		return c.fail(exitOther, "%v", err)
	}
	defer sess.Close()
	reports := sess.Servers()
	code := exitOK
	for _, r := range reports {
		if r.State != mcp.StateReady && r.State != mcp.StateDisabled {
			code = exitOther
		}
	}
	if *jsonOut {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(reports)
		return code
	}
	for _, r := range reports {
		line := fmt.Sprintf("%s (%s): %s", r.Name, r.Transport, r.State)
		if r.State == mcp.StateReady {
			line += fmt.Sprintf(", %d tools, started in %dms", len(r.Tools), r.StartMS)
		}
		if r.PerSession {
			line += ", one instance per session"
		}
		if r.Error != "" {
			line += ": " + r.Error
		}
		fmt.Fprintln(c.stdout, line)
		for _, t := range r.Tools {
			ro := ""
			if t.ReadOnly {
				ro = " (read-only)"
			}
			fmt.Fprintf(c.stdout, "  %s%s\n", t.ModelName, ro)
		}
		for _, o := range r.Omitted {
			fmt.Fprintf(c.stdout, "  - %s left out: %s\n", o.Name, o.Reason)
		}
	}
	for _, w := range sess.Warnings() {
		if strings.Contains(w, "is offered as") {
			fmt.Fprintln(c.stdout, "note: "+strings.TrimPrefix(w, "mcp: "))
		}
	}
	fmt.Fprintln(c.stdout, "Tool lists are read when a session starts; a server whose tools change takes effect at the next session.")
	return code
}

func (c *cli) mcpTest(ctx context.Context, args []string) int {
	h := mcpTestHelp
	fs := h.flags()
	if code, done := c.parseFlags(fs, h, interleaved(args)); done {
		return code
	}
	if fs.NArg() != 1 {
		return c.usageError(h, "needs one server name")
	}
	name := fs.Arg(0)
	cfg, err := c.loadConfig()
	if err != nil {
		return c.fail(exitUsage, "%v", err)
	}
	sc, ok := cfg.MCPServers[name]
	if !ok {
		if names := cfg.MCPServerNames(); len(names) > 0 {
			return c.fail(exitUsage, "no MCP server %q is configured; known: %s", name, strings.Join(names, ", "))
		}
		return c.fail(exitUsage, "no MCP server %q is configured; none are (add them under mcp_servers: in the config)", name)
	}
	if !sc.IsEnabled() {
		// Testing a disabled server is what a person fixing it wants.
		t := true
		sc.Enabled = &t
		cfg.MCPServers[name] = sc
	}
	m, err := c.newMCP(ctx, cfg, c.logger(cfg, false), nil, nil, name)
	if err != nil {
		return c.setupExit(err)
	}
	start := time.Now()
	sess, err := m.Session(ctx)
	took := time.Since(start)
	if err != nil {
		m.Close()
		return c.fail(exitOther, "%v", err)
	}
	r := sess.Servers()[0]
	closeStart := time.Now()
	sess.Close()
	m.Close()
	closeTook := time.Since(closeStart)
	if r.State != mcp.StateReady {
		return c.fail(exitOther, "mcp server %s: %s: %s", name, r.State, r.Error)
	}
	fmt.Fprintf(c.stdout, "%s (%s): started and listed %d tools in %dms (handshake and listing %dms); shut down in %dms\n",
		name, r.Transport, len(r.Tools), took.Milliseconds(), r.StartMS, closeTook.Milliseconds())
	for _, t := range r.Tools {
		ro := ""
		if t.ReadOnly {
			ro = " (read-only)"
		}
		fmt.Fprintf(c.stdout, "  %s → %s%s\n", t.Name, t.ModelName, ro)
	}
	for _, o := range r.Omitted {
		fmt.Fprintf(c.stdout, "  - %s left out: %s\n", o.Name, o.Reason)
	}
	return exitOK
}
