package app

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/internal/config"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/anthropic"
	"github.com/talaria-agent/talaria/llm/gemini"
	"github.com/talaria-agent/talaria/llm/openai"
	"github.com/talaria-agent/talaria/observe"
	"github.com/talaria-agent/talaria/turn"
)

// Routes builds the primary route (the configuration with o's overrides)
// and the fallback chain; cs keeps the key pools' cooldowns (the store).
//
// A key goes only to the host of the provider entry it belongs to: when
// o.BaseURL moves an entry to another host, the entry's keys stay behind
// unless o.APIKeyEnv names the variable to send there. A provider picked
// only because its key is set is no choice of the user's: a BaseURL or API
// then mean a server of the user's own ("custom") or the built-in entry of
// that wire format, never the picked vendor's key.
func Routes(cfg *Config, o Options, cs failover.CooldownStore) ([]turn.Route, error) {
	o.defaults()
	if o.API != "" && !config.ValidAPI(o.API) {
		return nil, &ConfigError{fmt.Sprintf("--api %q is not a wire format Talaria speaks; use one of %s", o.API, config.APIChoice())}
	}
	name := o.Provider
	if name == "" && !(cfg.ProviderPicked && (o.BaseURL != "" || o.API != "")) {
		name = cfg.Provider
	}
	if name == "" && (o.BaseURL != "" || o.API != "") {
		// API alone means that vendor's built-in entry; "custom" is
		// only a server of the user's own, named by BaseURL.
		name = "custom"
		if b, ok := config.BuiltinFor(o.API); ok && o.BaseURL == "" {
			name = b
		}
	}
	if name == "" {
		return nil, &ConfigError{"no provider is configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY, pass --base-url and --api, or configure providers in " + ConfigPath(cfg) + " (try `talaria demo` to see Talaria work without a key)"}
	}
	p, ok := cfg.Providers[name]
	if !ok && o.BaseURL == "" {
		return nil, &ConfigError{fmt.Sprintf("provider %q is not configured; known: %s", name, strings.Join(cfg.ProviderNames(), ", "))}
	}
	p, err := override(p, name, o)
	if err != nil {
		return nil, err
	}
	model := p.Model
	if cfg.Model != "" && o.Provider == "" {
		model = cfg.Model
	}
	if o.Model != "" {
		model = o.Model
	}
	if name == "custom" && !ok && model == "" {
		return nil, &ConfigError{fmt.Sprintf("no model for the server at %s: pass --model", p.BaseURL)}
	}
	check := p.Check
	if o.APIKeyEnv != "" || o.BaseURL != "" || o.API != "" {
		// The entry was made or moved by overrides: say it in flag terms.
		check = p.CheckFlags
	}
	if err := check(name); err != nil {
		return nil, &ConfigError{err.Error()}
	}
	primary, err := route(cfg, o, name, p, model, cs)
	if err != nil {
		return nil, err
	}
	warnUnsetKey(o, name, p)
	routes := []turn.Route{primary}
	for _, fb := range cfg.Fallback {
		fp := cfg.Providers[fb.Provider]
		warnUnsetKey(o, fb.Provider, fp)
		m := fb.Model
		if m == "" {
			m = fp.Model
		}
		r, err := route(cfg, o, fb.Provider, fp, m, cs)
		if err != nil {
			return nil, fmt.Errorf("fallback: %w", err)
		}
		routes = append(routes, r)
	}
	return routes, nil
}

// override applies o's API, BaseURL and APIKeyEnv to provider entry p.
func override(p config.Provider, name string, o Options) (config.Provider, error) {
	if o.API != "" {
		p.API = o.API
	}
	if p.API == "" {
		p.API = "openai"
	}
	if o.BaseURL != "" {
		if u, err := url.Parse(o.BaseURL); err != nil || u.Scheme == "" || u.Host == "" {
			return p, &ConfigError{fmt.Sprintf("--base-url %q is not a URL like http://127.0.0.1:8000/v1", o.BaseURL)}
		}
		if !config.SameHost(p.BaseURL, o.BaseURL) {
			if held := p.KeyEnv; o.APIKeyEnv == "" && held != "" && o.Getenv(held) != "" {
				o.Warn(fmt.Sprintf("not sending %s to %s: it holds the key for provider %s at %s; pass --api-key-env %s if that server should get it",
					held, o.BaseURL, name, p.BaseURL, held))
			}
			p.KeyEnv, p.Keys = "", nil
		}
		p.BaseURL = o.BaseURL
	}
	if o.APIKeyEnv != "" {
		if strings.TrimSpace(o.Getenv(o.APIKeyEnv)) == "" {
			return p, &ConfigError{fmt.Sprintf("--api-key-env %s: that variable is not set; export it with the key, or leave out --api-key-env to send no key", o.APIKeyEnv)}
		}
		p.KeyEnv, p.Keys = o.APIKeyEnv, nil
	}
	return p, nil
}

// ProviderRoute builds the route of configured provider entry name with
// model ("" for the entry's default): a session's own choice on a server.
func ProviderRoute(cfg *Config, o Options, name, model string, cs failover.CooldownStore) (turn.Route, error) {
	o.defaults()
	p, ok := cfg.Providers[name]
	if !ok {
		return turn.Route{}, fmt.Errorf("provider %q is not configured; known: %s", name, strings.Join(cfg.ProviderNames(), ", "))
	}
	if model == "" {
		model = p.Model
	}
	return route(cfg, o, name, p, model, cs)
}

// route builds one provider client with its key pool.
func route(cfg *Config, o Options, name string, p config.Provider, model string, cs failover.CooldownStore) (turn.Route, error) {
	if !config.ValidAPI(p.API) {
		return turn.Route{}, &ConfigError{fmt.Sprintf("--api %q: use one of %s", p.API, config.APIChoice())}
	}
	if model == "" {
		return turn.Route{}, &ConfigError{fmt.Sprintf("provider %q has no model: pass --model or set providers.%s.model", name, name)}
	}
	if p.BaseURL != "" {
		if u, err := url.Parse(p.BaseURL); err != nil || u.Scheme == "" || u.Host == "" {
			return turn.Route{}, &ConfigError{fmt.Sprintf("base URL %q of provider %q is not a URL like http://127.0.0.1:8000/v1", p.BaseURL, name)}
		}
	}
	keys := p.KeyList(o.Getenv)
	if len(keys) == 0 && OfficialHost(p.BaseURL) {
		env := p.KeyEnv
		if env == "" {
			env = "providers." + name + ".key_env"
		}
		return turn.Route{}, &ConfigError{fmt.Sprintf("no API key for %s: set %s (several keys: comma-separated), or use --base-url for a server that needs none", config.VendorName(name), env)}
	}
	// Local servers (vLLM, llama.cpp, Ollama) usually need no key: none
	// is sent, and with no key there is nothing to bench, so a 401 from
	// such a server never benches anything.
	prov, err := provider(cfg, o, name, p, model, keys)
	if err != nil {
		return turn.Route{}, err
	}
	// Every error text a provider returns is scrubbed of the keys this
	// process holds and of token-shaped strings before anything writes it.
	prov = llm.Redact(prov, scrubber(cfg, o.Getenv, keys...))
	if o.WrapProvider != nil {
		prov = o.WrapProvider(prov)
	}
	strategy := failover.Strategy(p.KeyStrategy)
	if strategy == "" {
		strategy = failover.StrategyFillFirst
	}
	r := turn.Route{Provider: prov, Model: model,
		// subscription: included calls are reported as such, not as $0.
		Subscription: p.Subscription}
	if len(keys) == 0 {
		r.NoKeyHint = noKeyHint(name, p)
	}
	if len(keys) > 0 {
		// Cooldowns belong to provider + endpoint + key fingerprint.
		r.Pool = failover.NewPool(name, keys, strategy, cs, nil).ForEndpoint(p.BaseURL).WithLogger(o.Logger)
	}
	return r, nil
}

// provider builds the client of entry name's wire format.
func provider(cfg *Config, o Options, name string, p config.Provider, model string, keys []string) (llm.Provider, error) {
	key := ""
	if len(keys) > 0 {
		key = keys[0]
	}
	to := llm.Timeouts{Header: time.Duration(cfg.Timeouts.ResponseHeader), Idle: time.Duration(cfg.Timeouts.StreamIdle)}
	// One client (one connection pool) per provider endpoint, shared by the
	// primary route, fallbacks on the same provider and every per-session
	// route a gateway builds.
	hc := o.Clients.get(name+" "+p.BaseURL, to)
	switch p.API {
	case config.APIAnthropic:
		return anthropic.New(anthropic.Config{Name: name, BaseURL: p.BaseURL, APIKey: key, Headers: p.Headers, HTTPClient: hc,
			ThinkingBudget: cfg.ThinkingBudget(p, model), CacheTTL: p.CacheTTL}), nil
	case config.APIGemini:
		g, err := gemini.New(gemini.Config{Name: name, BaseURL: p.BaseURL, APIKey: key, Headers: p.Headers, HTTPClient: hc,
			ThinkingBudget: cfg.ThinkingBudget(p, model)})
		if err != nil {
			return nil, &ConfigError{err.Error()}
		}
		return g, nil
	case config.APIOpenAIResponses:
		return openai.NewResponses(openai.Config{Name: name, BaseURL: p.BaseURL, APIKey: key, Headers: p.Headers, HTTPClient: hc,
			ReasoningEffort: p.Reasoning.Effort, ReasoningSummary: p.Reasoning.Summary, NoReasoningReplay: !p.Reasoning.ReplayOn(),
			NativeCompaction: cfg.Compression.Native && !cfg.Compression.Disabled, CompactThreshold: nativeCompactThreshold(cfg, model)}), nil
	}
	return openai.NewChat(openai.Config{Name: name, BaseURL: p.BaseURL, APIKey: key, Headers: p.Headers, MaxTokensField: p.MaxTokensField, HTTPClient: hc}), nil
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

// warnUnsetKey warns that entry name names a key variable that is not
// set, so its server gets no key: a warning, not an error, since a local
// server may need none (an official host without a key is an error in
// route).
func warnUnsetKey(o Options, name string, p config.Provider) {
	if p.KeyEnv == "" || len(p.Keys) > 0 || len(p.KeyList(o.Getenv)) > 0 || OfficialHost(p.BaseURL) {
		return
	}
	o.Warn(fmt.Sprintf("warning: %s is not set, so no key is sent to %s (provider %s); set it if that server needs a key", p.KeyEnv, p.BaseURL, name))
}

// OfficialHost reports whether base is a vendor's own API host, which
// always needs a key.
func OfficialHost(base string) bool {
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

// ConfigPath is the configuration file's path.
func ConfigPath(cfg *Config) string {
	if cfg.File != "" {
		return cfg.File
	}
	return cfg.Home + "/config.yaml"
}

// Clients hands out one HTTP client per provider endpoint and timeouts,
// so every route to a provider shares one tuned connection pool. It is
// safe for concurrent use (a gateway builds routes per session); the zero
// value is ready.
type Clients struct {
	mu sync.Mutex
	m  map[clientKey]*http.Client
}

type clientKey struct {
	endpoint string
	to       llm.Timeouts
}

func (h *Clients) get(endpoint string, to llm.Timeouts) *http.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := clientKey{endpoint, to}
	if c, ok := h.m[k]; ok {
		return c
	}
	if h.m == nil {
		h.m = map[clientKey]*http.Client{}
	}
	c := llm.NewHTTPClient(to)
	h.m[k] = c
	return c
}

// scrubber removes the keys of every configured provider, the secrets of
// serve.tokens and token-shaped strings (sk-…, Bearer …) from text that
// leaves the process.
func scrubber(cfg *Config, getenv func(string) string, keys ...string) func(string) string {
	own := append([]string(nil), keys...)
	for _, p := range cfg.Providers {
		own = append(own, p.KeyList(getenv)...)
	}
	for _, t := range cfg.Serve.Tokens {
		if t.Env != "" {
			own = append(own, strings.TrimSpace(getenv(t.Env)))
		}
	}
	sc := observe.NewScrubber(observe.CaptureFull, 0, own)
	return func(s string) string { return observe.RedactSecrets(sc.Own(s)) }
}
