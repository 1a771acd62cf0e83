package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/internal/config"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/storeopen"
	"github.com/talaria-agent/talaria/tool/mcp"
)

// doctorCmd checks the setup and says what to fix, line by line.
func (c *cli) doctorCmd(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	var dbURL string
	databaseFlag(fs, &dbURL)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	ok := true
	say := func(good bool, format string, a ...any) {
		mark := "ok  "
		if !good {
			mark = "FAIL"
			ok = false
		}
		fmt.Fprintf(c.stdout, "%s %s\n", mark, fmt.Sprintf(format, a...))
	}
	cfg, err := c.loadConfig()
	if err != nil {
		say(false, "configuration: %v", err)
		return exitUsage
	}
	if cfg.File != "" {
		say(true, "configuration: %s", cfg.File)
	} else {
		say(true, "configuration: no file at %s/config.yaml; using defaults and the environment", cfg.Home)
	}
	st, err := openStore(ctx, cfg, dbURL, c.logger(cfg, false))
	if err != nil {
		say(false, "database: %v", err)
	} else {
		list, lerr := st.ListSessions(ctx, store.ListOptions{Limit: 1000})
		where := storeopen.Describe(dbOptions(cfg, nil))
		if backend, _, _ := storeopen.Target(dbOptions(cfg, nil)); backend == storeopen.Postgres {
			say(lerr == nil, "database: PostgreSQL %s (%d sessions)", where, len(list))
		} else {
			say(lerr == nil, "database: %s (%d sessions, synchronous=%s)", where, len(list), cfg.Database.Synchronous)
		}
		_ = st.Close()
	}
	if cfg.Provider == "" {
		say(false, "provider: none chosen; set OPENAI_API_KEY or ANTHROPIC_API_KEY, or `provider:` in the config")
	}
	cat := compact.NewCatalogue(nil)
	for _, name := range cfg.ProviderNames() {
		p := cfg.Providers[name]
		keys := p.KeyList(c.getenv)
		marker := ""
		if name == cfg.Provider {
			marker = " (default)"
		}
		info := cat.Lookup(p.Model)
		window := fmt.Sprintf("%d-token window", info.Window)
		if !info.Known {
			window = fmt.Sprintf("not in the catalogue, assuming a %d-token window", info.Window)
		}
		switch {
		case len(keys) > 0:
			say(true, "provider %s%s: %s API at %s, model %s (%s), %d key(s)", name, marker, p.API, p.BaseURL, p.Model, window, len(keys))
		case !officialHost(p.BaseURL):
			// As in run: a local server (vLLM, llama.cpp, Ollama) usually
			// needs no key.
			say(true, "provider %s%s: %s API at %s, model %s (%s), no key (a local server usually needs none)", name, marker, p.API, p.BaseURL, p.Model, window)
		case name == cfg.Provider:
			say(false, "provider %s%s: no key; set %s", name, marker, p.KeyEnv)
		default:
			fmt.Fprintf(c.stdout, "--   provider %s: no key (%s unset); not usable until set\n", name, p.KeyEnv)
		}
	}
	c.doctorMCP(ctx, cfg, say)
	if wd, err := os.Getwd(); err == nil {
		say(true, "workspace: %s", wd)
	}
	if !ok {
		return exitUsage
	}
	return exitOK
}

// doctorMCP starts every configured MCP server and lists its tools.
func (c *cli) doctorMCP(ctx context.Context, cfg *config.Config, say func(bool, string, ...any)) {
	if len(cfg.MCPServers) == 0 {
		return
	}
	m, err := c.newMCP(cfg, c.logger(cfg, false), nil)
	if err != nil {
		say(false, "mcp: %v", err)
		return
	}
	defer m.Close()
	sess, err := m.Session(ctx)
	if err != nil {
		say(false, "mcp: %v", err)
		return
	}
	defer sess.Close()
	for _, r := range sess.Servers() {
		switch r.State {
		case mcp.StateDisabled:
			fmt.Fprintf(c.stdout, "--   mcp server %s: disabled\n", r.Name)
		case mcp.StateReady:
			say(true, "mcp server %s (%s): %d tools, started in %dms", r.Name, r.Transport, len(r.Tools), r.StartMS)
		default:
			say(false, "mcp server %s (%s): %s: %s (try `talaria mcp test %s`)", r.Name, r.Transport, r.State, r.Error, r.Name)
		}
	}
}
