package main

import (
	"context"
	"errors"
	"fmt"
	root "github.com/talaria-agent/talaria/app"
	"os"
	"time"

	"github.com/talaria-agent/talaria/catalogue"
	"github.com/talaria-agent/talaria/internal/config"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/storeopen"
	"github.com/talaria-agent/talaria/tool/mcp"
	"github.com/talaria-agent/talaria/tool/sandbox"
)

var doctorHelp = cmdHelp{
	name:  "doctor",
	usage: "[--json]",
	about: `Checks the configuration, the providers (API, endpoint, model and whether a
key is set, as merged from the config, the built-in defaults and the
environment), benched keys and the database. Exit 0 when everything needed
for a run is in place, 2 when something must be fixed.`,
	examples: []string{"talaria doctor", "talaria doctor --json | jq '.checks[] | select(.status == \"fail\")'"},
}

// check is one line of doctor's report.
type check struct {
	Status string `json:"status"` // ok, fail, warn, info
	Item   string `json:"item"`   // configuration, database, provider NAME, benched, workspace
	Detail string `json:"detail"`
}

// doctorCmd checks the setup and says what to fix, line by line.
func (c *cli) doctorCmd(ctx context.Context, args []string) int {
	fs := doctorHelp.flags()
	jsonOut := fs.Bool("json", false, "print the checks as JSON")
	var dbURL string
	databaseFlag(fs, &dbURL)
	if code, done := c.parseFlags(fs, doctorHelp, args); done {
		return code
	}
	if fs.NArg() > 0 {
		return c.usageError(doctorHelp, "takes no arguments")
	}
	checks := c.doctorChecks(ctx, dbURL)
	ok := true
	for _, ch := range checks {
		ok = ok && ch.Status != "fail"
	}
	if *jsonOut {
		c.printJSON(map[string]any{"ok": ok, "checks": checks})
	} else {
		for _, ch := range checks {
			mark := map[string]string{"ok": "ok  ", "fail": "FAIL", "warn": "WARN", "info": "--  "}[ch.Status]
			fmt.Fprintf(c.stdout, "%s %s: %s\n", mark, ch.Item, ch.Detail)
		}
	}
	if !ok {
		return exitUsage
	}
	return exitOK
}

func (c *cli) doctorChecks(ctx context.Context, dbURL string) []check {
	var out []check
	add := func(status, item, format string, a ...any) {
		out = append(out, check{Status: status, Item: item, Detail: fmt.Sprintf(format, a...)})
	}
	cfg, err := c.loadConfig()
	if err != nil {
		add("fail", "configuration", "%v", err)
		return out
	}
	if cfg.File != "" {
		add("ok", "configuration", "%s", cfg.File)
	} else {
		add("ok", "configuration", "no file at %s/config.yaml; using defaults and the environment", cfg.Home)
	}
	if ws, err := os.Getwd(); err == nil {
		switch sb, err := root.SandboxPolicy(ctx, cfg, "", ws); {
		case err != nil:
			add("fail", "sandbox", "%v", err)
		case sb.Mode == sandbox.Off:
			add("warn", "sandbox", "off: shell commands and MCP servers run unconfined (sandbox.mode: off)")
		default:
			add("ok", "sandbox", "%s", sb)
		}
	}
	st, err := c.openStoreFor(ctx, cfg, dbURL, true)
	var missing *storeopen.MissingError
	if errors.As(err, &missing) {
		// Not created here: a typo'd path must not turn into an empty
		// database reported as ok. At the default location this is
		// simply a fresh install.
		status := "fail"
		if defaultDatabase(cfg, dbURL) {
			status = "info"
		}
		add(status, "database", "%v", missing)
	} else if err != nil {
		add("fail", "database", "%v", err)
	} else {
		list, lerr := st.ListSessions(ctx, store.ListOptions{Limit: 1000})
		status := "ok"
		if lerr != nil {
			status = "fail"
		}
		// Opening reads the header only: a damaged page shows up in a full
		// integrity check (SQLite's quick_check), not in a listing.
		if qc, ok := st.(interface{ QuickCheck(context.Context) error }); ok && lerr == nil {
			if err := qc.QuickCheck(ctx); err != nil {
				add("fail", "database", "%s", store.Describe(err))
				status = "fail"
			}
		}
		where := storeopen.Describe(root.StoreOptions(cfg, nil))
		if backend, _, _ := storeopen.Target(root.StoreOptions(cfg, nil)); backend == storeopen.Postgres {
			add(status, "database", "PostgreSQL %s (%d sessions)", where, len(list))
		} else {
			add(status, "database", "%s (%d sessions, synchronous=%s)", where, len(list), cfg.Database.Synchronous)
		}
		if b, err := benched(ctx, cfg, st, c.getenv, ""); err == nil {
			for _, k := range b {
				// Informational: a bench ends by itself, or with keys reset.
				add("info", "benched", "%s key %s at %s after %s until %s (talaria keys reset %s lifts it)",
					k.Provider, keyLabel(k), k.BaseURL, k.Reason, k.Until.Local().Format(time.DateTime), k.Provider)
			}
		}
		_ = st.Close()
	}
	c.doctorProviders(cfg, add)
	c.doctorMCP(ctx, cfg, add)
	if wd, err := os.Getwd(); err == nil {
		add("ok", "workspace", "%s", wd)
	}
	return out
}

// doctorProviders checks each provider entry: its key, endpoint and
// model window.
func (c *cli) doctorProviders(cfg *config.Config, add func(status, item, format string, a ...any)) {
	if cfg.Provider == "" {
		add("fail", "provider", "none chosen; set OPENAI_API_KEY or ANTHROPIC_API_KEY, or `provider:` in the config")
	}
	cat := catalogue.New(nil)
	for _, name := range cfg.ProviderNames() {
		p := cfg.Providers[name]
		keys := p.KeyList(c.getenv)
		item := "provider " + name
		if name == cfg.Provider {
			item += " (default)"
		}
		info := cat.Lookup(p.Model)
		window := fmt.Sprintf("%d-token window", info.Window)
		if !info.Known {
			window = fmt.Sprintf("not in the catalogue, assuming a %d-token window", info.Window)
		}
		switch {
		case len(keys) > 0:
			add("ok", item, "%s API at %s, model %s (%s), %d key(s)", p.API, p.BaseURL, p.Model, window, len(keys))
		case !root.OfficialHost(p.BaseURL) && p.KeyEnv != "":
			// A named key that is not there: said, not failed (the
			// server may need none), as run and chat say it.
			add("warn", item, "%s API at %s, model %s (%s): key_env %s is not set, so no key is sent (fine if the server needs none)", p.API, p.BaseURL, p.Model, window, p.KeyEnv)
		case !root.OfficialHost(p.BaseURL):
			// As in run: a local server (vLLM, llama.cpp, Ollama) usually
			// needs no key.
			add("ok", item, "%s API at %s, model %s (%s), no key (a local server usually needs none)", p.API, p.BaseURL, p.Model, window)
		case name == cfg.Provider:
			add("fail", item, "%s API at %s, model %s: no key; set %s", p.API, p.BaseURL, p.Model, p.KeyEnv)
		default:
			add("info", item, "%s API at %s, model %s: no key (%s unset); not usable until set", p.API, p.BaseURL, p.Model, p.KeyEnv)
		}
	}
}

// doctorMCP starts every configured MCP server and lists its tools.
func (c *cli) doctorMCP(ctx context.Context, cfg *config.Config, add func(status, item, format string, a ...any)) {
	if len(cfg.MCPServers) == 0 {
		return
	}
	m, err := c.newMCP(ctx, cfg, c.logger(cfg, false), nil, nil)
	if err != nil {
		add("fail", "mcp", "%v", err)
		return
	}
	defer m.Close()
	sess, err := m.Session(ctx)
	if err != nil {
		add("fail", "mcp", "%v", err)
		return
	}
	defer sess.Close()
	for _, r := range sess.Servers() {
		item := "mcp server " + r.Name
		switch r.State {
		case mcp.StateDisabled:
			add("info", item, "disabled")
		case mcp.StateReady:
			add("ok", item+" ("+r.Transport+")", "%d tools, started in %dms", len(r.Tools), r.StartMS)
		default:
			add("fail", item+" ("+r.Transport+")", "%s: %s (try `talaria mcp test %s`)", r.State, r.Error, r.Name)
		}
	}
}
