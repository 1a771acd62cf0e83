// Package app is Talaria's composition root: it turns the configuration
// file, plus one invocation's overrides, into a ready agent or gateway. It
// owns what both need — the providers with their key pools and shared HTTP
// clients, the model catalogue, compression, the built-in tools under the
// sandbox, MCP servers, telemetry and the database — so the talaria command
// only parses flags and prints, and an embedder gets the same agent:
//
//	cfg, err := app.Load(os.Getenv)
//	...
//	a, err := app.NewAgent(ctx, cfg, app.Options{Workspace: dir})
//	...
//	defer a.Close()
//	s, err := a.NewSession(ctx, agent.SessionOptions{})
//	res, err := a.RunTurn(ctx, s.ID, agent.Input{Text: "list the files"})
//
// NewGateway builds the HTTP service the same way (talaria serve).
package app

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/internal/config"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/storeopen"
	"github.com/talaria-agent/talaria/turn"
)

// Config is the configuration file's contents with the environment's
// overrides applied (README "Configuration").
type Config = config.Config

// Load reads the configuration: $TALARIA_HOME/config.yaml (default
// ~/.talaria), then the environment's overrides. getenv nil is os.Getenv.
func Load(getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	home, err := config.Home(getenv)
	if err != nil {
		return nil, &ConfigError{err.Error()}
	}
	cfg, err := config.Load(home, getenv)
	if err != nil {
		return nil, &ConfigError{err.Error()}
	}
	return cfg, nil
}

// ConfigError is a problem with the configuration or the overrides that a
// person fixes (the CLI exits 2 with Msg).
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

// DatabaseError is a failure to open the database, worded by
// store.Describe: one line that names the database and what to do.
type DatabaseError struct{ Err error }

func (e *DatabaseError) Error() string { return store.Describe(e.Err) }
func (e *DatabaseError) Unwrap() error { return e.Err }

// Options are one invocation's choices beside the configuration: the CLI's
// one-run flags, and the hooks through which the caller hears what a
// person should see. The zero value uses the configuration as it is.
type Options struct {
	// Provider, Model, BaseURL, API and APIKeyEnv override the primary
	// route (the CLI's --provider, --model, --base-url, --api and
	// --api-key-env). A key goes only to the host of the provider entry it
	// belongs to: a BaseURL on another host gets none unless APIKeyEnv
	// names the variable to send there.
	Provider, Model, BaseURL, API, APIKeyEnv string
	// Workspace is the directory the agent works in (default: the project
	// root above the current directory for NewAgent, the current directory
	// for NewGateway).
	Workspace string
	// Sandbox overrides sandbox.mode.
	Sandbox string
	// MaxIterations, when positive, overrides max_iterations.
	MaxIterations int
	// Database overrides database.url: a URL, or a SQLite file path.
	Database string
	// AutoApprove lets tools that change things run without asking, as
	// approvals: auto does; otherwise Approver asks.
	AutoApprove bool
	Approver    turn.Approver
	// AdmitWait is how long a turn waits for another holder of its
	// session (agent.Config.AdmitWait).
	AdmitWait time.Duration
	// Quiet leaves out the sandbox status line (not the warning that the
	// sandbox is off).
	Quiet bool

	// Getenv reads the environment (keys, ${VAR} in MCP servers); nil is
	// os.Getenv.
	Getenv func(string) string
	// Logger receives the log; nil discards it.
	Logger *slog.Logger
	// Status receives status lines (the sandbox in force, MCP servers
	// starting) and Warn warnings for a person (a key not sent); nil
	// drops them.
	Status func(line string)
	Warn   func(line string)
	// Observer joins the observers every turn reports to.
	Observer turn.Observer
	// WrapProvider, when set, wraps every route's provider (the CLI's
	// progress display watches calls this way).
	WrapProvider func(llm.Provider) llm.Provider
	// Clients shares providers' HTTP clients between the agents of one
	// process; nil: a fresh set.
	Clients *Clients
	// Version names this program to MCP servers and telemetry.
	Version string
}

func (o *Options) defaults() {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Status == nil {
		o.Status = func(string) {}
	}
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
	if o.Clients == nil {
		o.Clients = &Clients{}
	}
}

// OpenStore opens the configured database (SQLite or PostgreSQL, see
// storeopen), with database (a URL or a SQLite file path, "" for the
// configuration's) overriding it; a failure is a *DatabaseError.
func OpenStore(ctx context.Context, cfg *Config, database string, log *slog.Logger) (store.Store, error) {
	ApplyDatabase(cfg, database)
	st, err := storeopen.Open(ctx, StoreOptions(cfg, log))
	if err != nil {
		return nil, &DatabaseError{err}
	}
	return st, nil
}

// ApplyDatabase makes database (a URL, or a SQLite file path) override
// the configuration's database; "" changes nothing.
func ApplyDatabase(cfg *Config, database string) {
	switch {
	case database == "":
	case strings.Contains(database, "://"):
		cfg.Database.URL = database
	default: // a plain path names a SQLite file
		cfg.Database.URL, cfg.Database.Path = "", database
	}
}

// StoreOptions are storeopen's options for the configured database.
func StoreOptions(cfg *Config, log *slog.Logger) storeopen.Options {
	return storeopen.Options{URL: cfg.Database.URL, Path: cfg.Database.Path,
		Synchronous: cfg.Database.Synchronous, Logger: log}
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}
