// Package anthropic implements llm.Provider over the Anthropic Messages API
// (POST /v1/messages with stream: true), using the official SDK for the HTTP
// transport and SSE framing while building the request body itself so the
// same llm.Request always yields the same bytes.
package anthropic

import (
	"cmp"
	"context"
	"iter"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/talaria-agent/talaria/llm"
)

const (
	defaultName      = "anthropic"
	defaultMaxTokens = 8192
	messagesPath     = "v1/messages"
	// defaultBaseURL is where calls go without Config.BaseURL (the SDK's
	// production endpoint).
	defaultBaseURL = "https://api.anthropic.com"
)

// Config configures a Provider. The zero value talks to the production API
// without a key.
type Config struct {
	// Name is the provider name used in errors and status lines; default "anthropic".
	Name string
	// BaseURL is the API root, e.g. https://api.anthropic.com, without /v1:
	// the adapter appends v1/messages (a trailing /v1 is tolerated and dropped).
	BaseURL string
	// APIKey is the default key, sent as x-api-key; llm.Request.APIKey
	// overrides it per call.
	APIKey string
	// HTTPClient sends the requests; nil uses llm.NewHTTPClient: its own
	// connection pool, no overall timeout (the caller's ctx bounds a call),
	// and the header and stream-idle limits of Timeouts.
	HTTPClient *http.Client
	// Timeouts configures the default client; ignored with HTTPClient.
	Timeouts llm.Timeouts
	// Headers are extra request headers (e.g. anthropic-beta).
	Headers map[string]string
	// DefaultMaxTokens is sent as max_tokens when Request.MaxTokens is 0
	// (the API requires the field); default 8192.
	DefaultMaxTokens int
	// ThinkingBudget turns extended thinking on with this budget_tokens for
	// every model; ModelThinking overrides it per model (0 turns it off for
	// that model). The API's minimum is 1024 and the budget must stay below
	// max_tokens: a request breaking either rule fails before it is sent.
	ThinkingBudget int
	ModelThinking  map[string]int
	// CacheTTL is the prompt-cache tier of the breakpoints a request with
	// PromptCache gets when it names none (llm.Request.CacheTTL): "" or
	// TTL5m the API's default 5-minute tier, TTL1h the 1-hour tier, whose
	// writes cost 2× input instead of 1.25× and which outlives a pause
	// between turns. Checked by ValidCacheTTL.
	CacheTTL string
}

// The prompt-cache tiers the Messages API offers.
const (
	TTL5m = "5m"
	TTL1h = "1h"
)

// ValidCacheTTL reports whether ttl is a tier the API accepts ("" is the
// default).
func ValidCacheTTL(ttl string) bool { return ttl == "" || ttl == TTL5m || ttl == TTL1h }

// Provider is the Anthropic Messages adapter. It is safe for concurrent use.
type Provider struct {
	name      string
	baseURL   string // as configured, or defaultBaseURL; reported on errors
	apiKey    string
	maxTokens int
	cacheTTL  string
	thinking  thinkingConfig
	client    sdk.Client
	// tools is the tool list validated and encoded once (see
	// encodeIncremental).
	tools toolCaches
	// drainWait bounds the read for the end of the body after message_stop.
	drainWait time.Duration
}

var _ llm.Provider = (*Provider)(nil)

// New builds a Provider from cfg. It never reads the environment: the SDK's
// ANTHROPIC_* autoload is disabled so only cfg decides where calls go.
func New(cfg Config) *Provider {
	p := &Provider{
		name:      cfg.Name,
		baseURL:   cmp.Or(strings.TrimSpace(cfg.BaseURL), defaultBaseURL),
		apiKey:    cfg.APIKey,
		maxTokens: cfg.DefaultMaxTokens,
		cacheTTL:  cfg.CacheTTL,
		drainWait: drainTimeout,
		thinking:  thinkingConfig{budget: cfg.ThinkingBudget, perModel: maps.Clone(cfg.ModelThinking)},
	}
	if p.name == "" {
		p.name = defaultName
	}
	if p.maxTokens <= 0 {
		p.maxTokens = defaultMaxTokens
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = llm.NewHTTPClient(cfg.Timeouts)
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(hc),
		// Talaria's retry loop owns retries: it classifies, rotates keys and
		// falls back, which the SDK's blind retries would pre-empt.
		option.WithMaxRetries(0),
	}
	if base := normalizeBaseURL(cfg.BaseURL); base != "" {
		opts = append(opts, option.WithBaseURL(base))
	}
	// Sorted so the header set is the same on every run.
	for _, k := range slices.Sorted(maps.Keys(cfg.Headers)) {
		opts = append(opts, option.WithHeader(k, cfg.Headers[k]))
	}
	p.client = sdk.NewClient(opts...)
	return p
}

// Name returns the configured provider name.
func (p *Provider) Name() string { return p.name }

// Stream sends req with stream: true and yields the answer as it arrives; see
// llm.Provider for the closing rule. Every error is an *llm.APIError.
func (p *Provider) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		ctx := ctx // this iteration's, traced below
		model := ""
		if req != nil {
			model = req.Model
		}
		req = p.withTier(req)
		var body []byte
		var err error
		if req != nil && req.Wire != nil {
			var key string
			body, key, err = encodeIncremental(req, p.maxTokens, p.thinking.budgetFor(model), &p.tools)
			if err == nil {
				var release func()
				ctx, release = req.Wire.ReleaseAfterWrite(ctx, key, body)
				defer release()
			}
		} else {
			body, err = buildRequestBody(req, p.maxTokens, p.thinking.budgetFor(model))
		}
		if err != nil {
			yield(llm.Event{}, p.buildError(model, err))
			return
		}
		capture := &responseCapture{}
		opts := []option.RequestOption{
			option.WithMiddleware(capture.middleware),
			option.WithHeader("Accept", "text/event-stream"),
		}
		if key := p.keyFor(req); key != "" {
			opts = append(opts, option.WithHeader("x-api-key", key))
		}
		var res *http.Response
		if err := p.client.Post(ctx, messagesPath, body, &res, opts...); err != nil {
			yield(llm.Event{}, p.requestError(ctx, model, err, capture))
			return
		}
		if res == nil || res.Body == nil {
			var h http.Header
			if res != nil {
				h = res.Header
			}
			yield(llm.Event{}, p.streamBroke(ctx, model, h, "", errEmptyBody))
			return
		}
		if notAStream(res) {
			err := p.plainAnswer(model, res)
			_ = res.Body.Close()
			yield(llm.Event{}, err)
			return
		}
		dec := ssestream.NewDecoder(res)
		defer dec.Close()
		p.consume(ctx, model, res.Header, dec, yield)
	}
}

// keyFor picks the per-request key over the configured one.
func (p *Provider) keyFor(req *llm.Request) string {
	if req != nil && req.APIKey != "" {
		return req.APIKey
	}
	return p.apiKey
}

// normalizeBaseURL drops a trailing /v1 because the adapter appends v1/messages.
func normalizeBaseURL(s string) string {
	s = strings.TrimRight(strings.TrimSpace(s), "/")
	s = strings.TrimSuffix(s, "/v1")
	return s
}

// withTier returns req with its cache tier settled: the request's own, else
// the provider's; the default tier is written as no ttl at all (as the API
// documents it), so "5m" and "" send the same bytes.
func (p *Provider) withTier(req *llm.Request) *llm.Request {
	if req == nil || !req.PromptCache {
		return req
	}
	ttl := req.CacheTTL
	if ttl == "" {
		ttl = p.cacheTTL
	}
	if ttl == TTL5m {
		ttl = ""
	}
	if ttl == req.CacheTTL {
		return req
	}
	r := *req
	r.CacheTTL = ttl
	return &r
}
