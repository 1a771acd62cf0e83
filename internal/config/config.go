// Package config reads Talaria's configuration: ~/.talaria/config.yaml
// (TALARIA_HOME moves the whole directory), then environment overrides,
// then the command line's one-run flags, which the CLI applies.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/talaria-agent/talaria/internal/lazy"
)

// Provider is one configured model endpoint.
type Provider struct {
	// API is the wire format: "openai" (Chat Completions, any compatible
	// server), "openai-responses" (Responses), "anthropic" (Messages) or
	// "gemini" (generateContent); see wire.go.
	API     string `yaml:"api"`
	BaseURL string `yaml:"base_url"`
	Model   string `yaml:"model"`
	// KeyEnv names the environment variable holding the key; a
	// comma-separated value gives several keys for rotation.
	KeyEnv string `yaml:"key_env"`
	// Keys lists keys inline (prefer KeyEnv so keys stay out of files).
	Keys []string `yaml:"keys"`
	// KeyStrategy: fill-first (default), round-robin or least-used.
	KeyStrategy string            `yaml:"key_strategy"`
	Headers     map[string]string `yaml:"headers"`
	// MaxTokensField: "max_tokens" or "max_completion_tokens" (openai API only).
	MaxTokensField string `yaml:"max_tokens_field"`
	// Thinking turns extended thinking on (anthropic, gemini).
	Thinking *Thinking `yaml:"thinking"`
	// CacheTTL is the prompt-cache tier (anthropic only): "5m" (the
	// default) or "1h", the 1-hour tier whose writes cost 2× input.
	CacheTTL string `yaml:"cache_ttl"`
	// Reasoning configures Responses reasoning (openai-responses).
	Reasoning Reasoning `yaml:"reasoning"`
	// Subscription marks calls through this provider as included in a
	// subscription: costs say so instead of showing $0 or "unknown".
	Subscription bool `yaml:"subscription"`
}

// FallbackRoute names a provider entry of the fallback chain and optionally a
// model other than its default. (turn.Route is the resolved route: provider
// client, model, key pool.)
type FallbackRoute struct {
	Provider string `yaml:"provider"`
	Model    string `yaml:"model"`
}

// Compression configures context compression.
type Compression struct {
	// Threshold is the fraction of the window that triggers compression
	// (default 0.5); ThresholdTokens, when set, is an absolute limit instead.
	Threshold       float64  `yaml:"threshold"`
	ThresholdTokens int      `yaml:"threshold_tokens"`
	Model           string   `yaml:"model"`      // auxiliary model for summaries (default: the session's)
	Attempts        int      `yaml:"attempts"`   // per turn (default 3)
	OnFailure       string   `yaml:"on_failure"` // placeholder (default) or abort
	Timeout         Duration `yaml:"timeout"`    // summary call (default 60s)
	TailMessages    int      `yaml:"tail_messages"`
	Disabled        bool     `yaml:"disabled"`
	// WarnRatio is the share of the window past which a request that
	// compression will not shrink (disabled, or its passes for the turn
	// used up) is warned about once (default 0.85; negative: never).
	WarnRatio float64 `yaml:"warn_ratio"`
	// Rotate continues a session in a new child session at each
	// compression (the parent ends, its rows untouched) instead of
	// archiving the compressed rows in place.
	Rotate bool `yaml:"rotate"`
	// Native opts in to server-side compaction on the OpenAI Responses API
	// (models and endpoints that support it only); its threshold sits
	// below the local trigger so the server compacts first.
	Native bool `yaml:"native"`
}

// Guards turns the loop and stall guards on and off.
type Guards struct {
	IdenticalCalls        *bool   `yaml:"identical_calls"`
	ToolLoopStop          int     `yaml:"tool_loop_stop"` // unattended runs: stop after N identical calls (0 = never)
	SaidButStopped        *bool   `yaml:"said_but_stopped"`
	EmptyResponse         *bool   `yaml:"empty_response"`
	EmptyRetries          *int    `yaml:"empty_retries"` // nil: the default (3); 0: no retries
	EmptyCostThresholdUSD float64 `yaml:"empty_cost_threshold_usd"`
}

// Model overrides the catalogue entry of one model.
type Model struct {
	Window            int     `yaml:"window"`
	MaxOutput         int     `yaml:"max_output"`
	InputPerMTok      float64 `yaml:"input_per_mtok"`
	OutputPerMTok     float64 `yaml:"output_per_mtok"`
	CacheReadPerMTok  float64 `yaml:"cache_read_per_mtok"`
	CacheWritePerMTok float64 `yaml:"cache_write_per_mtok"`
	// CompressionThreshold (a fraction of the window) or
	// CompressionThresholdTokens replaces compression.threshold for this
	// model.
	CompressionThreshold       float64 `yaml:"compression_threshold"`
	CompressionThresholdTokens int     `yaml:"compression_threshold_tokens"`
	// Thinking overrides the provider's thinking setting for this model
	// (budget_tokens: 0 turns it off).
	Thinking *Thinking `yaml:"thinking"`
}

// Database configures the store: a SQLite file by default, or PostgreSQL
// when URL is postgres://… (several nodes on one database).
type Database struct {
	// URL selects the database: postgres://user@host/dbname for PostgreSQL,
	// sqlite://PATH for a SQLite file; empty means the SQLite file at Path.
	// TALARIA_DATABASE_URL overrides it.
	URL  string `yaml:"url"`
	Path string `yaml:"path"` // default $TALARIA_HOME/state.db
	// Synchronous: "normal" (default: survives any process crash) or
	// "full" (also survives power loss; slower commits).
	Synchronous string `yaml:"synchronous"`
}

// Config is the whole file.
type Config struct {
	// Provider is the default provider entry; Model overrides its model.
	Provider  string              `yaml:"provider"`
	Model     string              `yaml:"model"`
	Providers map[string]Provider `yaml:"providers"`
	Fallback  []FallbackRoute     `yaml:"fallback"`
	// Approvals: "ask" (default: chat asks, run refuses unless --yes) or
	// "auto" (tools that change things run without asking).
	Approvals     string           `yaml:"approvals"`
	MaxIterations int              `yaml:"max_iterations"`
	MaxRetries    *int             `yaml:"max_retries"` // nil: the default (3); 0: no retries
	MaxTokens     int              `yaml:"max_tokens"`
	PromptCache   *bool            `yaml:"prompt_cache"`
	Compression   Compression      `yaml:"compression"`
	Guards        Guards           `yaml:"guards"`
	Subagents     Subagents        `yaml:"subagents"`
	Memory        Memory           `yaml:"memory"`
	Review        Review           `yaml:"review"`
	Models        map[string]Model `yaml:"models"`
	Database      Database         `yaml:"database"`
	Telemetry     Telemetry        `yaml:"telemetry"`
	ShellTimeout  Duration         `yaml:"shell_timeout"`
	Sandbox       Sandbox          `yaml:"sandbox"`
	Timeouts      Timeouts         `yaml:"timeouts"`
	// SystemPrompt replaces the default prompt; SystemPromptExtra extends it.
	SystemPrompt      string `yaml:"system_prompt"`
	SystemPromptExtra string `yaml:"system_prompt_extra"`
	LogLevel          string `yaml:"log_level"`
	// MCPServers are Model Context Protocol servers whose tools are offered
	// to the model (mcp.go).
	MCPServers map[string]MCPServer `yaml:"mcp_servers"`
	// Serve configures `talaria serve` (serve.go).
	Serve Serve `yaml:"serve"`

	// Home is the directory the config came from (not read from the file).
	Home string `yaml:"-"`
	// File is the config file path, "" when there was none.
	File string `yaml:"-"`
	// ProviderPicked: Provider was not chosen by the user but picked
	// because its key variable is set; --base-url and --api then do not
	// move that entry (and its key) elsewhere.
	ProviderPicked bool `yaml:"-"`
}

// Duration is a time.Duration written as "90s" or "2m" in YAML.
type Duration time.Duration

// UnmarshalYAML reads a Go duration ("90s", "2m", "1h30m") or a plain
// number of seconds ("30", "1.5"); anything else ("5 minutes", "2 mins")
// is an error naming the line, never a quiet reading of its leading number.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	t := strings.TrimSpace(s)
	if v, err := time.ParseDuration(t); err == nil {
		*d = Duration(v)
		return nil
	}
	if secs, err := strconv.ParseFloat(t, 64); err == nil && !math.IsInf(secs, 0) && !math.IsNaN(secs) &&
		math.Abs(secs) < float64(math.MaxInt64/int64(time.Second)) {
		*d = Duration(time.Duration(secs * float64(time.Second)))
		return nil
	}
	return fmt.Errorf("line %d: %q is not a duration (use a Go duration such as 90s, 5m or 1h30m, or a plain number of seconds)", n.Line, s)
}

// Home returns the configuration directory: $TALARIA_HOME, else ~/.talaria.
func Home(getenv func(string) string) (string, error) {
	if h := getenv("TALARIA_HOME"); h != "" {
		h, err := ExpandPath("TALARIA_HOME", h, getenv)
		if err != nil {
			return "", err
		}
		return filepath.Abs(h)
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find the home directory (set TALARIA_HOME): %w", err)
	}
	return filepath.Join(u, ".talaria"), nil
}

// Load reads home/config.yaml when it exists, fills defaults, and applies
// the environment (getenv, usually os.Getenv): TALARIA_PROVIDER,
// TALARIA_MODEL, TALARIA_BASE_URL, TALARIA_API, TALARIA_DB, and the
// built-in providers' OPENAI_API_KEY / ANTHROPIC_API_KEY.
func Load(home string, getenv func(string) string) (*Config, error) {
	c := &Config{Home: home}
	file := filepath.Join(home, "config.yaml")
	data, err := os.ReadFile(file)
	switch {
	case err == nil:
		c.File = file
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		// io.EOF: an empty or comments-only file is an empty config.
		if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: %s (fix the file, or move it aside to use defaults)", file, yamlProblem(err))
		}
		c.Home, c.File = home, file
	case errors.Is(err, fs.ErrNotExist):
	default:
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	c.defaults(getenv)
	if err = c.resolvePaths(getenv); err == nil {
		c.applyEnv(getenv)
		err = c.resolveEnvPaths(getenv)
	}
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		where := "configuration"
		if c.File != "" {
			where = c.File
		}
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return c, nil
}

// unknownField rewrites yaml.v3's "field x not found in type config.Config",
// which names Go types, as what a person typed wrong.
var unknownField = lazy.Regexp(`field (\S+) not found in type .*$`)

// yamlProblem puts a decode error on one line: yaml.v3 lists each field
// problem on a line of its own, and a CLI error must be one line.
func yamlProblem(err error) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return strings.TrimPrefix(err.Error(), "yaml: ")
	}
	probs := make([]string, len(te.Errors))
	for i, p := range te.Errors {
		probs[i] = unknownField().ReplaceAllString(p, "unknown key $1")
	}
	return strings.Join(probs, "; ")
}

func (c *Config) defaults(getenv func(string) string) {
	if c.Providers == nil {
		c.Providers = map[string]Provider{}
	}
	// A partial entry for a built-in provider keeps the defaults it does
	// not override (api, base URL, key variable, model).
	for name, def := range builtinProviders(getenv) {
		if p, ok := c.Providers[name]; ok {
			c.Providers[name] = mergeBuiltin(p, def)
		} else {
			c.Providers[name] = def
		}
	}
	for name, p := range c.Providers {
		if p.API == "" {
			p.API = "openai"
		}
		c.Providers[name] = p
	}
	if c.Approvals == "" {
		c.Approvals = "ask"
	}
	if c.Database.Synchronous == "" {
		c.Database.Synchronous = "normal"
	}
}

// resolvePaths expands ~ and $VARS in the config file's database settings
// and refuses a bare relative path there: every directory a person runs in
// would quietly get its own database.
func (c *Config) resolvePaths(getenv func(string) string) error {
	u, err := resolveSQLiteURL("database.url", c.Database.URL, getenv, resolveDatabasePath)
	if err != nil {
		return err
	}
	c.Database.URL = u
	if c.Database.Path == "" || getenv("TALARIA_DB") != "" {
		// TALARIA_DB replaces the file's path (resolveEnvPaths).
		c.Database.Path = filepath.Join(c.Home, "state.db")
		return nil
	}
	p, err := resolveDatabasePath("database.path", c.Database.Path, getenv)
	if err != nil {
		return err
	}
	c.Database.Path = p
	return nil
}

// resolveEnvPaths applies the shell's rule (ResolveUserPath) to the paths
// the environment gave: TALARIA_DB and a sqlite:// TALARIA_DATABASE_URL.
func (c *Config) resolveEnvPaths(getenv func(string) string) error {
	if v := getenv("TALARIA_DB"); v != "" {
		p, err := ResolveUserPath("TALARIA_DB", v, getenv)
		if err != nil {
			return err
		}
		c.Database.Path = p
	}
	if v := getenv("TALARIA_DATABASE_URL"); v != "" {
		u, err := ResolveDatabaseURL("TALARIA_DATABASE_URL", v, getenv)
		if err != nil {
			return err
		}
		c.Database.URL = u
	}
	return nil
}

func (c *Config) applyEnv(getenv func(string) string) {
	if v := getenv("TALARIA_PROVIDER"); v != "" {
		c.Provider = v
	}
	if v := getenv("TALARIA_MODEL"); v != "" {
		c.Model = v
	}
	if v := getenv("TALARIA_DB"); v != "" {
		c.Database.Path = v
	}
	if v := getenv("TALARIA_DATABASE_URL"); v != "" {
		c.Database.URL = v
	}
	if v := getenv("TALARIA_API"); v != "" || getenv("TALARIA_BASE_URL") != "" {
		name := c.Provider
		if name == "" {
			// An api without a URL means that vendor's built-in entry;
			// "custom" is only for a server of the user's own.
			name = "custom"
			if b, ok := BuiltinFor(v); ok && getenv("TALARIA_BASE_URL") == "" {
				name = b
			}
			c.Provider = name
		}
		p := c.Providers[name]
		if v != "" {
			p.API = v
		}
		if u := getenv("TALARIA_BASE_URL"); u != "" {
			if !SameHost(p.BaseURL, u) {
				// The entry's keys belong to its own host, not this one.
				p.KeyEnv, p.Keys = "", nil
			}
			p.BaseURL = u
		}
		c.Providers[name] = p
	}
	if c.Provider == "" {
		// No choice made: the first built-in whose key is set.
		for _, name := range []string{"openai", "anthropic"} {
			if getenv(c.Providers[name].KeyEnv) != "" {
				c.Provider, c.ProviderPicked = name, true
				break
			}
		}
	}
}

// Validate checks values a person may have mistyped.
func (c *Config) Validate() error {
	for _, name := range c.ProviderNames() {
		p := c.Providers[name]
		if err := validateWire(name, p); err != nil {
			return err
		}
		if err := p.Check(name); err != nil {
			return err
		}
		switch p.KeyStrategy {
		case "", "fill-first", "round-robin", "least-used":
		default:
			return fmt.Errorf("providers.%s.key_strategy is %q; use fill-first, round-robin or least-used", name, p.KeyStrategy)
		}
	}
	if c.Provider != "" {
		if _, ok := c.Providers[c.Provider]; !ok && c.Providers[c.Provider].BaseURL == "" {
			return fmt.Errorf("provider %q is not configured; known: %s", c.Provider, strings.Join(c.ProviderNames(), ", "))
		}
	}
	for i, r := range c.Fallback {
		if _, ok := c.Providers[r.Provider]; !ok {
			return fmt.Errorf("fallback[%d].provider %q is not configured; known: %s", i, r.Provider, strings.Join(c.ProviderNames(), ", "))
		}
	}
	switch c.Approvals {
	case "ask", "auto":
	default:
		return fmt.Errorf("approvals is %q; use ask or auto", c.Approvals)
	}
	switch c.Database.Synchronous {
	case "normal", "full":
	default:
		return fmt.Errorf("database.synchronous is %q; use normal or full", c.Database.Synchronous)
	}
	switch c.Compression.OnFailure {
	case "", "placeholder", "abort":
	default:
		return fmt.Errorf("compression.on_failure is %q; use placeholder or abort", c.Compression.OnFailure)
	}
	if t := c.Compression.Threshold; t < 0 || t > 1 {
		return fmt.Errorf("compression.threshold is %g; use a fraction of the window between 0 and 1 (or threshold_tokens)", t)
	}
	for name, m := range c.Models {
		if t := m.CompressionThreshold; t < 0 || t > 1 {
			return fmt.Errorf("models.%s.compression_threshold is %g; use a fraction of the window between 0 and 1 (or compression_threshold_tokens)", name, t)
		}
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"max_iterations", c.MaxIterations}, {"max_retries", intOr(c.MaxRetries, 0)}, {"max_tokens", c.MaxTokens},
		{"guards.tool_loop_stop", c.Guards.ToolLoopStop}, {"guards.empty_retries", intOr(c.Guards.EmptyRetries, 0)}} {
		if n.v < 0 {
			return fmt.Errorf("%s is %d; it cannot be negative", n.name, n.v)
		}
	}
	if err := c.validateSandbox(); err != nil {
		return err
	}
	if err := c.validateMCP(); err != nil {
		return err
	}
	if err := c.Timeouts.validate(); err != nil {
		return err
	}
	if v := c.Guards.EmptyCostThresholdUSD; v < 0 {
		return fmt.Errorf("guards.empty_cost_threshold_usd is %g; it cannot be negative", v)
	}
	return nil
}

// ProviderNames lists configured providers, sorted.
func (c *Config) ProviderNames() []string {
	names := make([]string, 0, len(c.Providers))
	for n := range c.Providers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// KeyList returns the keys of provider p: inline keys, else the comma-separated
// value of its KeyEnv.
func (p Provider) KeyList(getenv func(string) string) []string {
	if len(p.Keys) > 0 {
		return p.Keys
	}
	if p.KeyEnv == "" {
		return nil
	}
	var keys []string
	for _, k := range strings.Split(getenv(p.KeyEnv), ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// intOr is *p, or def when the key was absent.
func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}
