package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/agent"
	root "github.com/talaria-agent/talaria/app"
	"github.com/talaria-agent/talaria/internal/config"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/storeopen"
	"github.com/talaria-agent/talaria/turn"
)

// routeFlags are the one-run provider overrides shared by run and chat.
type routeFlags struct {
	provider  string
	model     string
	baseURL   string
	api       string
	workspace string
	yes       bool
	maxIter   int
	verbose   bool
	database  string
	// apiKeyEnv names the variable whose key goes to --base-url: keys
	// never follow a moved endpoint unless the user names them for it.
	apiKeyEnv string
	// sandbox overrides sandbox.mode.
	sandbox string
	// quiet (run --quiet) leaves out the sandbox line (not the warning
	// that the sandbox is off).
	quiet bool
}

func (f *routeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.provider, "provider", "", "provider entry from the config (default: config's provider, or whichever of OPENAI_API_KEY/ANTHROPIC_API_KEY is set)")
	fs.StringVar(&f.model, "model", "", "model to use instead of the provider's default")
	fs.StringVar(&f.baseURL, "base-url", "", "API base URL (OpenAI-compatible: ending in /v1; Anthropic: without /v1)")
	fs.StringVar(&f.api, "api", "", "wire format of --base-url: openai, openai-responses, anthropic or gemini")
	fs.StringVar(&f.apiKeyEnv, "api-key-env", "", "environment variable whose key (comma-separated: several) is sent to this run's endpoint; without it no key goes to a --base-url other than the provider's own")
	fs.StringVar(&f.workspace, "workspace", "", "directory the agent works in (default: the project root: the nearest directory up from here holding .git, else go.mod or AGENTS.md, else this one)")
	fs.BoolVar(&f.yes, "yes", false, "let tools that change things run without asking")
	fs.StringVar(&f.sandbox, "sandbox", "", "sandbox mode for shell commands and file tools: read-only, workspace-write (default) or off")
	fs.IntVar(&f.maxIter, "max-iterations", 0, "model calls per turn before the final summing-up call (default 40)")
	fs.BoolVar(&f.verbose, "verbose", false, "log details to stderr")
	databaseFlag(fs, &f.database)
}

// stdioServer runs a command that serves a protocol on stdin and stdout
// (acp, mcp serve): its flags are the route flags, it takes no arguments,
// and serve runs under a context the first Ctrl+C cancels.
func (c *cli) stdioServer(ctx context.Context, h cmdHelp, args []string, serve func(context.Context, *routeFlags) int) int {
	fs := h.flags()
	var rf routeFlags
	rf.register(fs)
	if code, done := c.parseFlags(fs, h, args); done {
		return code
	}
	if err := rf.check(fs); err != nil {
		return c.usageError(h, "%v", err)
	}
	if fs.NArg() > 0 {
		return c.usageError(h, "takes no arguments (got %q)", fs.Arg(0))
	}
	ctx, stop := interruptible(ctx)
	defer stop()
	return serve(ctx, &rf)
}

// databaseFlag registers --database, the per-command override of
// database.url / TALARIA_DATABASE_URL.
func databaseFlag(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "database", "", "database to use: postgres://user@host/dbname, sqlite://PATH or a SQLite file path (default: TALARIA_DATABASE_URL, database.url, else the SQLite file)")
}

// check rejects values the flag package accepts but Talaria does not: an
// explicit --max-iterations of 0 or less (the config rejects it too; it
// must not quietly mean the default).
func (f *routeFlags) check(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "max-iterations" && f.maxIter <= 0 {
			err = fmt.Errorf("--max-iterations is %d; use a positive number of model calls (default 40)", f.maxIter)
		}
	})
	return err
}

// app is everything a command that runs turns needs: the composition
// root's agent (package app) and the progress display's call watch.
type app struct {
	cfg    *config.Config
	store  store.Store
	agent  *agent.Agent
	routes []turn.Route
	log    *slog.Logger
	// watch reports model calls to the turn's progress display.
	watch *callWatch
	// built is what the composition root built (nil in tests that make an
	// app by hand).
	built *root.Agent
}

func (a *app) Close() {
	if a.built != nil {
		a.built.Close()
	}
}

func (c *cli) loadConfig() (*config.Config, error) {
	return root.Load(c.getenv)
}

func (c *cli) logger(cfg *config.Config, verbose bool) *slog.Logger {
	// Errors reach the user as one line each, worded by the command; log
	// lines stay out of the way unless asked for (log_level, --verbose).
	level := slog.LevelError
	switch strings.ToLower(cfg.LogLevel) {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "warn":
		level = slog.LevelWarn
	}
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: level}))
}

// openStore opens the configured database (SQLite or PostgreSQL, see
// storeopen), with --database (flagURL) overriding the configuration; its
// errors are one line naming the database and what to do.
func openStore(ctx context.Context, cfg *config.Config, flagURL string, log *slog.Logger) (store.Store, error) {
	return root.OpenStore(ctx, cfg, flagURL, log)
}

// openStoreFor opens an existing database for a command that reads it or
// changes what is in it (never creating a SQLite file: a missing one is a
// *storeopen.MissingError); a command that only reads (readOnly) opens it
// read-only (see storeopen.Options.ReadOnly).
func (c *cli) openStoreFor(ctx context.Context, cfg *config.Config, flagURL string, readOnly bool) (store.Store, error) {
	log := c.logger(cfg, false)
	root.ApplyDatabase(cfg, flagURL)
	o := root.StoreOptions(cfg, log)
	o.ReadOnly, o.MustExist = readOnly, true
	st, err := storeopen.Open(ctx, o)
	if err != nil {
		return nil, &dbError{err}
	}
	return st, nil
}

// defaultDatabase reports whether the database is the default SQLite file
// ($TALARIA_HOME/state.db), named by no flag, variable or config key.
func defaultDatabase(cfg *config.Config, flagURL string) bool {
	return flagURL == "" && cfg.Database.URL == "" && cfg.Database.Path == filepath.Join(cfg.Home, "state.db")
}

// setupError is a configuration problem: exit code 2 and a one-line message.
type setupError struct{ msg string }

func (e *setupError) Error() string { return e.msg }

// options are the composition root's options for flags f: the one-run
// overrides, and the command's stderr for status lines and warnings.
func (c *cli) options(f *routeFlags, log *slog.Logger) root.Options {
	return root.Options{
		Provider: f.provider, Model: f.model, BaseURL: f.baseURL, API: f.api, APIKeyEnv: f.apiKeyEnv,
		Workspace: f.workspace, Sandbox: f.sandbox, MaxIterations: f.maxIter, Database: f.database,
		AutoApprove: f.yes, Quiet: f.quiet,
		Getenv: c.getenv, Logger: log, Status: statusPrinter(c.stderr),
		Warn:    func(line string) { fmt.Fprintln(c.stderr, "talaria: "+line) },
		Clients: &c.clients, Version: version,
	}
}

// setup loads config, opens the store and builds the agent (package app).
func (c *cli) setup(ctx context.Context, f *routeFlags, approver turn.Approver, admitWait time.Duration) (*app, error) {
	cfg, err := c.loadConfig()
	if err != nil {
		return nil, err
	}
	log := c.logger(cfg, f.verbose)
	watch := &callWatch{}
	o := c.options(f, log)
	o.Approver, o.AdmitWait, o.Observer = approver, admitWait, c.memory
	o.WrapProvider = func(p llm.Provider) llm.Provider { return watchedProvider{Provider: p, watch: watch} }
	b, err := root.NewAgent(ctx, cfg, o)
	if err != nil {
		return nil, err
	}
	return &app{cfg: cfg, store: b.Store, agent: b.Agent, routes: b.Routes, log: log, watch: watch, built: b}, nil
}

// workspaceDir is the workspace: the --workspace flag, else the project
// root above the current directory; cwd is the current directory.
func workspaceDir(flagDir string) (ws, cwd string, err error) { return root.WorkspaceDir(flagDir) }

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

// setupExit maps a setup error to its exit code and prints it.
func (c *cli) setupExit(err error) int {
	var se *setupError
	var ce *root.ConfigError
	switch {
	case errors.As(err, &se):
		return c.fail(exitUsage, "%s", se.msg)
	case errors.As(err, &ce):
		return c.fail(exitUsage, "%s", ce.Msg)
	}
	return c.fail(exitOther, "%v", err)
}
