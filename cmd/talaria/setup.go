package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/catalogue"
	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/internal/config"
	"github.com/talaria-agent/talaria/internal/project"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/anthropic"
	"github.com/talaria-agent/talaria/llm/gemini"
	"github.com/talaria-agent/talaria/llm/openai"
	"github.com/talaria-agent/talaria/observe"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/storeopen"
	"github.com/talaria-agent/talaria/tool/builtin"
	"github.com/talaria-agent/talaria/tool/mcp"
	"github.com/talaria-agent/talaria/tool/sandbox"
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

// app is everything a command that runs turns needs.
type app struct {
	cfg    *config.Config
	store  store.Store
	agent  *agent.Agent
	routes []turn.Route
	log    *slog.Logger
	// mcp is the process's MCP manager and mcpSess this session's tools
	// from it (nil without mcp_servers).
	mcp     *mcp.Manager
	mcpSess *mcp.Session
	// watch reports model calls to the turn's progress display.
	watch *callWatch
	tel   *observe.Telemetry
	// closeEgress stops the sandbox's egress proxies.
	closeEgress func()
}

func (a *app) Close() {
	shutdownTelemetry(a.tel, a.log)
	if a.agent != nil {
		a.agent.Close() // stops background reviews before the tools and the store close
	}
	if a.mcpSess != nil {
		a.mcpSess.Close()
	}
	if a.mcp != nil {
		// Stops stdio servers and their process groups; no zombies.
		a.mcp.Close()
	}
	if a.closeEgress != nil {
		a.closeEgress()
	}
	if a.store != nil {
		_ = a.store.Close()
	}
}

func (c *cli) loadConfig() (*config.Config, error) {
	home, err := config.Home(c.getenv)
	if err != nil {
		return nil, err
	}
	return config.Load(home, c.getenv)
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
// errors are one line naming the database and what to do (dbError).
func openStore(ctx context.Context, cfg *config.Config, flagURL string, log *slog.Logger) (store.Store, error) {
	applyDatabaseFlag(cfg, flagURL)
	st, err := storeopen.Open(ctx, dbOptions(cfg, log))
	if err != nil {
		return nil, &dbError{err}
	}
	return st, nil
}

// applyDatabaseFlag makes --database (flagURL) override the configuration.
func applyDatabaseFlag(cfg *config.Config, flagURL string) {
	switch {
	case flagURL == "":
	case strings.Contains(flagURL, "://"):
		cfg.Database.URL = flagURL
	default: // a plain path names a SQLite file
		cfg.Database.URL, cfg.Database.Path = "", flagURL
	}
}

// openStoreFor opens an existing database for a command that reads it or
// changes what is in it (never creating a SQLite file: a missing one is a
// *storeopen.MissingError); a command that only reads (readOnly) opens it
// read-only (see storeopen.Options.ReadOnly).
func (c *cli) openStoreFor(ctx context.Context, cfg *config.Config, flagURL string, readOnly bool) (store.Store, error) {
	log := c.logger(cfg, false)
	applyDatabaseFlag(cfg, flagURL)
	o := dbOptions(cfg, log)
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

func dbOptions(cfg *config.Config, log *slog.Logger) storeopen.Options {
	return storeopen.Options{URL: cfg.Database.URL, Path: cfg.Database.Path,
		Synchronous: cfg.Database.Synchronous, Logger: log}
}

// setupError is a configuration problem: exit code 2 and a one-line message.
type setupError struct{ msg string }

func (e *setupError) Error() string { return e.msg }

// setup loads config, opens the store and builds the agent.
func (c *cli) setup(ctx context.Context, f *routeFlags, approver turn.Approver, admitWait time.Duration) (*app, error) {
	cfg, err := c.loadConfig()
	if err != nil {
		return nil, &setupError{err.Error()}
	}
	log := c.logger(cfg, f.verbose)
	st, err := openStore(ctx, cfg, f.database, log)
	if err != nil {
		return nil, err
	}
	a := &app{cfg: cfg, store: st, log: log, watch: &callWatch{}}
	routes, err := c.routes(cfg, f, st, log)
	if err != nil {
		a.Close()
		return nil, err
	}
	for i := range routes {
		routes[i].Provider = watchedProvider{Provider: routes[i].Provider, watch: a.watch}
	}
	a.routes = routes
	ws, cwd, err := workspaceDir(f.workspace)
	if err != nil {
		a.Close()
		return nil, err
	}
	sb, err := sandboxPolicy(ctx, cfg, f.sandbox, ws)
	if err != nil {
		a.Close()
		return nil, err
	}
	a.closeEgress = withEgress(sb, log)
	status := statusPrinter(c.stderr)
	if !f.quiet || sb.Mode == sandbox.Off {
		status(sandboxLine(sb))
	}
	reapOrphans(log)
	tools, err := builtin.New(builtin.Options{Root: ws, ShellTimeout: time.Duration(cfg.ShellTimeout),
		Sandbox: sb, EnvNames: cfg.Sandbox.Env})
	if err != nil {
		a.Close()
		return nil, &setupError{fmt.Sprintf("workspace %s: %v", ws, err)}
	}
	if len(cfg.MCPServers) > 0 {
		if a.mcp, err = c.newMCP(ctx, cfg, log, status, sb); err != nil {
			a.Close()
			return nil, err
		}
		reserved := make([]string, len(tools))
		for i, t := range tools {
			reserved[i] = t.Info().Name
		}
		// A server that fails to start costs its tools, not the run.
		if a.mcpSess, err = a.mcp.Session(ctx, reserved...); err != nil {
			a.Close()
			return nil, err
		}
		tools = append(tools, a.mcpSess.Tools()...)
	}
	ac := agentConfig(cfg, routes, f.maxIter)
	if ac.Observer, a.tel, err = c.observers(ctx, cfg, st, log); err != nil {
		a.Close()
		return nil, err
	}
	ac.Observer = turn.MultiObserver(ac.Observer, c.memory)
	if !f.yes && cfg.Approvals != "auto" {
		ac.Approver = approver
	}
	ac.Store, ac.Tools, ac.Workspace, ac.AdmitWait, ac.Logger = st, tools, ws, admitWait, log
	// AGENTS.md goes into new sessions' fixed prompt only: a session
	// continued later keeps the bytes it started with (prompt cache).
	if p := project.Prompt(ws, cwd); p != "" {
		ac.SystemPromptExtra = strings.TrimSpace(strings.TrimSpace(ac.SystemPromptExtra) + "\n\n" + p)
	}
	ac.Subagents = agent.SubagentConfig{Enabled: boolOr(cfg.Subagents.Enabled, true), MaxDepth: cfg.Subagents.MaxDepth,
		MaxParallel: cfg.Subagents.MaxParallel, MaxIterations: cfg.Subagents.MaxIterations}
	ac.Memory = agent.MemoryConfig{Enabled: boolOr(cfg.Memory.Enabled, true), User: cfg.Memory.User, MaxTokens: cfg.Memory.MaxTokens}
	ac.Review = agent.ReviewConfig{Enabled: cfg.Review.Enabled, Idle: time.Duration(cfg.Review.Idle),
		MaxIterations: cfg.Review.MaxIterations}
	ag, err := agent.New(ac)
	if err != nil {
		a.Close()
		return nil, err
	}
	a.agent = ag
	return a, nil
}

// workspaceDir is the workspace: the --workspace flag, else the project
// root above the current directory (internal/project); cwd is the current
// directory, where the AGENTS.md files stop.
func workspaceDir(flagDir string) (ws, cwd string, err error) {
	if cwd, err = os.Getwd(); err != nil {
		return "", "", err
	}
	if flagDir == "" {
		return project.Root(cwd), cwd, nil
	}
	ws, err = filepath.Abs(flagDir)
	return ws, cwd, err
}

// agentConfig maps the config file (and --max-iterations, when positive)
// onto the settings run, chat and serve share: routes, limits, guards,
// compression, prompts. Unset limits stay zero: the packages that own them
// apply their defaults.
func agentConfig(cfg *config.Config, routes []turn.Route, maxIterations int) agent.Config {
	g := turn.GuardConfig{
		NoIdenticalCalls:      !boolOr(cfg.Guards.IdenticalCalls, true),
		NoSaidButStopped:      !boolOr(cfg.Guards.SaidButStopped, true),
		NoEmptyResponse:       !boolOr(cfg.Guards.EmptyResponse, true),
		ToolLoopStop:          cfg.Guards.ToolLoopStop,
		EmptyRetries:          emptyRetries(cfg.Guards.EmptyRetries),
		NoEmptyRetry:          cfg.Guards.EmptyRetries != nil && *cfg.Guards.EmptyRetries == 0,
		EmptyCostThresholdUSD: cfg.Guards.EmptyCostThresholdUSD,
	}
	ac := agent.Config{
		Routes:    routes,
		Catalogue: catalogue.New(modelOverrides(cfg)),
		Limits: turn.Limits{MaxIterations: cfg.MaxIterations, MaxRetries: emptyRetries(cfg.MaxRetries),
			NoRetries: cfg.MaxRetries != nil && *cfg.MaxRetries == 0,
			MaxTokens: cfg.MaxTokens},
		Guards:           g,
		Threshold:        compact.Threshold{Ratio: cfg.Compression.Threshold, Tokens: cfg.Compression.ThresholdTokens},
		CompressAttempts: cfg.Compression.Attempts,
		PressureRatio:    cfg.Compression.WarnRatio,
		// compression.rotate: continue compressed sessions in a child.
		RotateOnCompression: cfg.Compression.Rotate && !cfg.Compression.Disabled,
		PromptCache:         boolOr(cfg.PromptCache, true),
		SystemPrompt:        cfg.SystemPrompt,
		SystemPromptExtra:   cfg.SystemPromptExtra,
	}
	if maxIterations > 0 {
		ac.Limits.MaxIterations = maxIterations
	}
	if !cfg.Compression.Disabled {
		model := cfg.Compression.Model
		if model == "" {
			model = routes[0].Model
		}
		ac.Compressor = &compact.Compressor{
			Summarizer:      routes[0].Provider,
			Model:           model,
			Timeout:         time.Duration(cfg.Compression.Timeout),
			MinTailMessages: cfg.Compression.TailMessages,
			OnFailure:       compact.FailureMode(cfg.Compression.OnFailure),
		}
	}
	return ac
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

// routes builds the primary route (config + one-run flags) and the
// fallback chain.
//
// A key goes only to the host of the provider entry it belongs to: when
// --base-url moves an entry to another host, the entry's keys stay behind
// unless --api-key-env names the variable to send there. A provider picked
// only because its key is set is no choice of the user's: --base-url or
// --api then mean a server of the user's own ("custom") or the built-in
// entry of that wire format, never the picked vendor's key.
func (c *cli) routes(cfg *config.Config, f *routeFlags, cs failover.CooldownStore, log *slog.Logger) ([]turn.Route, error) {
	if f.api != "" && !config.ValidAPI(f.api) {
		return nil, &setupError{fmt.Sprintf("--api %q is not a wire format Talaria speaks; use one of %s", f.api, config.APIChoice())}
	}
	name := f.provider
	if name == "" && !(cfg.ProviderPicked && (f.baseURL != "" || f.api != "")) {
		name = cfg.Provider
	}
	if name == "" && (f.baseURL != "" || f.api != "") {
		// --api alone means that vendor's built-in entry; "custom" is
		// only a server of the user's own, named by --base-url.
		name = "custom"
		if b, ok := config.BuiltinFor(f.api); ok && f.baseURL == "" {
			name = b
		}
	}
	if name == "" {
		return nil, &setupError{"no provider is configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY, pass --base-url and --api, or configure providers in " + configPath(cfg) + " (try `talaria demo` to see Talaria work without a key)"}
	}
	p, ok := cfg.Providers[name]
	if !ok && f.baseURL == "" {
		return nil, &setupError{fmt.Sprintf("provider %q is not configured; known: %s", name, strings.Join(cfg.ProviderNames(), ", "))}
	}
	if f.api != "" {
		p.API = f.api
	}
	if p.API == "" {
		p.API = "openai"
	}
	if f.baseURL != "" {
		if u, err := url.Parse(f.baseURL); err != nil || u.Scheme == "" || u.Host == "" {
			return nil, &setupError{fmt.Sprintf("--base-url %q is not a URL like http://127.0.0.1:8000/v1", f.baseURL)}
		}
		if !config.SameHost(p.BaseURL, f.baseURL) {
			if held := p.KeyEnv; f.apiKeyEnv == "" && held != "" && c.getenv(held) != "" {
				fmt.Fprintf(c.stderr, "talaria: not sending %s to %s: it holds the key for provider %s at %s; pass --api-key-env %s if that server should get it\n",
					held, f.baseURL, name, p.BaseURL, held)
			}
			p.KeyEnv, p.Keys = "", nil
		}
		p.BaseURL = f.baseURL
	}
	if f.apiKeyEnv != "" {
		if strings.TrimSpace(c.getenv(f.apiKeyEnv)) == "" {
			return nil, &setupError{fmt.Sprintf("--api-key-env %s: that variable is not set; export it with the key, or leave out --api-key-env to send no key", f.apiKeyEnv)}
		}
		p.KeyEnv, p.Keys = f.apiKeyEnv, nil
	}
	model := p.Model
	if cfg.Model != "" && f.provider == "" {
		model = cfg.Model
	}
	if f.model != "" {
		model = f.model
	}
	if name == "custom" && !ok && model == "" {
		return nil, &setupError{fmt.Sprintf("no model for the server at %s: pass --model", p.BaseURL)}
	}
	check := p.Check
	if f.apiKeyEnv != "" || f.baseURL != "" || f.api != "" {
		// The entry was made or moved by flags: say it in flag terms.
		check = p.CheckFlags
	}
	if err := check(name); err != nil {
		return nil, &setupError{err.Error()}
	}
	primary, err := c.route(cfg, name, p, model, cs, log)
	if err != nil {
		return nil, err
	}
	c.warnUnsetKey(name, p)
	routes := []turn.Route{primary}
	for _, fb := range cfg.Fallback {
		fp := cfg.Providers[fb.Provider]
		c.warnUnsetKey(fb.Provider, fp)
		m := fb.Model
		if m == "" {
			m = fp.Model
		}
		r, err := c.route(cfg, fb.Provider, fp, m, cs, log)
		if err != nil {
			return nil, fmt.Errorf("fallback: %w", err)
		}
		routes = append(routes, r)
	}
	return routes, nil
}

// route builds one provider client with its key pool.
func (c *cli) route(cfg *config.Config, name string, p config.Provider, model string, cs failover.CooldownStore, log *slog.Logger) (turn.Route, error) {
	if !config.ValidAPI(p.API) {
		return turn.Route{}, &setupError{fmt.Sprintf("--api %q: use one of %s", p.API, config.APIChoice())}
	}
	if model == "" {
		return turn.Route{}, &setupError{fmt.Sprintf("provider %q has no model: pass --model or set providers.%s.model", name, name)}
	}
	if p.BaseURL != "" {
		if u, err := url.Parse(p.BaseURL); err != nil || u.Scheme == "" || u.Host == "" {
			return turn.Route{}, &setupError{fmt.Sprintf("base URL %q of provider %q is not a URL like http://127.0.0.1:8000/v1", p.BaseURL, name)}
		}
	}
	keys := p.KeyList(c.getenv)
	if len(keys) == 0 {
		if officialHost(p.BaseURL) {
			env := p.KeyEnv
			if env == "" {
				env = "providers." + name + ".key_env"
			}
			return turn.Route{}, &setupError{fmt.Sprintf("no API key for %s: set %s (several keys: comma-separated), or use --base-url for a server that needs none", config.VendorName(name), env)}
		}
		// Local servers (vLLM, llama.cpp, Ollama) usually need no key:
		// none is sent, and with no key there is nothing to bench, so a
		// 401 from such a server never benches anything.
	}
	key := ""
	if len(keys) > 0 {
		key = keys[0]
	}
	to := llm.Timeouts{Header: time.Duration(cfg.Timeouts.ResponseHeader), Idle: time.Duration(cfg.Timeouts.StreamIdle)}
	// One client (one connection pool) per provider endpoint, shared by the
	// primary route, fallbacks on the same provider and every per-session
	// route `serve` builds.
	hc := c.clients.get(name+" "+p.BaseURL, to)
	var prov llm.Provider
	switch p.API {
	case config.APIAnthropic:
		prov = anthropic.New(anthropic.Config{Name: name, BaseURL: p.BaseURL, APIKey: key, Headers: p.Headers, HTTPClient: hc,
			ThinkingBudget: cfg.ThinkingBudget(p, model), CacheTTL: p.CacheTTL})
	case config.APIGemini:
		g, err := gemini.New(gemini.Config{Name: name, BaseURL: p.BaseURL, APIKey: key, Headers: p.Headers, HTTPClient: hc,
			ThinkingBudget: cfg.ThinkingBudget(p, model)})
		if err != nil {
			return turn.Route{}, &setupError{err.Error()}
		}
		prov = g
	case config.APIOpenAIResponses:
		prov = openai.NewResponses(openai.Config{Name: name, BaseURL: p.BaseURL, APIKey: key, Headers: p.Headers, HTTPClient: hc,
			ReasoningEffort: p.Reasoning.Effort, ReasoningSummary: p.Reasoning.Summary, NoReasoningReplay: !p.Reasoning.ReplayOn(),
			NativeCompaction: cfg.Compression.Native && !cfg.Compression.Disabled, CompactThreshold: nativeCompactThreshold(cfg, model)})
	default:
		prov = openai.NewChat(openai.Config{Name: name, BaseURL: p.BaseURL, APIKey: key, Headers: p.Headers, MaxTokensField: p.MaxTokensField, HTTPClient: hc})
	}
	// Every error text a provider returns is scrubbed of the keys this
	// process holds and of token-shaped strings before anything writes it.
	prov = llm.Redact(prov, c.scrubber(cfg, keys...))
	strategy := failover.Strategy(p.KeyStrategy)
	if strategy == "" {
		strategy = failover.StrategyFillFirst
	}
	r := turn.Route{Provider: prov, Model: model, API: p.API, BaseURL: p.BaseURL,
		// subscription: included calls are reported as such, not as $0.
		Subscription: p.Subscription}
	if len(keys) == 0 {
		r.NoKeyHint = noKeyHint(name, p)
	}
	if len(keys) > 0 {
		// Cooldowns belong to provider + endpoint + key fingerprint.
		r.Pool = failover.NewPool(name, keys, strategy, cs, nil).ForEndpoint(p.BaseURL).WithLogger(log)
	}
	return r, nil
}

// noKeyHint says how a person gives entry name (which sends no key) one.
func noKeyHint(name string, p config.Provider) string {
	switch {
	case p.KeyEnv != "":
		return "set " + p.KeyEnv + " (it is empty)"
	case name == "custom":
		return "pass --api-key-env VAR naming the environment variable that holds its key"
	default:
		return "set providers." + name + ".key_env in the config, or pass --api-key-env VAR naming the environment variable that holds its key"
	}
}

// warnUnsetKey says on stderr that entry name names a key variable that is
// not set, so its server gets no key: a warning, not an error, since a
// local server may need none (an official host without a key is an error
// in route).
func (c *cli) warnUnsetKey(name string, p config.Provider) {
	if p.KeyEnv == "" || len(p.Keys) > 0 || len(p.KeyList(c.getenv)) > 0 || officialHost(p.BaseURL) {
		return
	}
	fmt.Fprintf(c.stderr, "talaria: warning: %s is not set, so no key is sent to %s (provider %s); set it if that server needs a key\n", p.KeyEnv, p.BaseURL, name)
}

func officialHost(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	switch u.Hostname() {
	case "api.openai.com", "api.anthropic.com", "openrouter.ai", "generativelanguage.googleapis.com", "api.deepseek.com", "api.mistral.ai":
		return true
	}
	return false
}

func configPath(cfg *config.Config) string {
	if cfg.File != "" {
		return cfg.File
	}
	return cfg.Home + "/config.yaml"
}

// setupExit maps a setup error to its exit code and prints it.
func (c *cli) setupExit(err error) int {
	var se *setupError
	if errors.As(err, &se) {
		return c.fail(exitUsage, "%s", se.msg)
	}
	return c.fail(exitOther, "%v", err)
}

// emptyRetries passes a set guards.empty_retries through; 0 travels as
// GuardConfig.NoEmptyRetry, since the engine's zero means its default.
func emptyRetries(n *int) int {
	if n == nil {
		return 0
	}
	return *n
}

// httpClients hands out one HTTP client per provider endpoint and timeouts,
// so every route to a provider shares one tuned connection pool. It is
// safe for concurrent use (serve builds routes per session).
type httpClients struct {
	mu sync.Mutex
	m  map[httpClientKey]*http.Client
}

type httpClientKey struct {
	endpoint string
	to       llm.Timeouts
}

func (h *httpClients) get(endpoint string, to llm.Timeouts) *http.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := httpClientKey{endpoint, to}
	if c, ok := h.m[k]; ok {
		return c
	}
	if h.m == nil {
		h.m = map[httpClientKey]*http.Client{}
	}
	c := llm.NewHTTPClient(to)
	h.m[k] = c
	return c
}

// scrubber removes the keys of every configured provider, the secrets of
// serve.tokens and token-shaped strings (sk-…, Bearer …) from text that
// leaves the process.
func (c *cli) scrubber(cfg *config.Config, keys ...string) func(string) string {
	own := append([]string(nil), keys...)
	for _, p := range cfg.Providers {
		own = append(own, p.KeyList(c.getenv)...)
	}
	for _, t := range cfg.Serve.Tokens {
		if t.Env != "" {
			own = append(own, strings.TrimSpace(c.getenv(t.Env)))
		}
	}
	sc := observe.NewScrubber(observe.CaptureFull, 0, own)
	return func(s string) string { return observe.RedactSecrets(sc.Own(s)) }
}
