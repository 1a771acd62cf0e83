// Package openai is Talaria's adapter for OpenAI-compatible endpoints
// (OpenAI, OpenRouter, vLLM, llama.cpp, Ollama, LM Studio, ...): NewChat
// speaks Chat Completions, NewResponses the Responses API.
//
// It uses github.com/openai/openai-go/v3 for the wire (base URL, auth,
// headers, SSE framing, API error shapes) but builds the request body itself
// so the same llm.Request always yields the same bytes, and decodes stream
// chunks itself so it can read the fields compatible servers add
// (reasoning_content, reasoning, cache counters) and tolerate their quirks.
package openai

import (
	"cmp"
	"context"
	"iter"
	"net/http"
	"slices"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/toolcache"
)

// Values for Config.MaxTokensField.
const (
	// FieldMaxTokens is the classic output cap understood by every
	// OpenAI-compatible server; it is the default.
	FieldMaxTokens = "max_tokens"
	// FieldMaxCompletionTokens is required by OpenAI's reasoning models,
	// which reject max_tokens.
	FieldMaxCompletionTokens = "max_completion_tokens"
)

// DefaultName is the provider name used when Config.Name is empty.
const DefaultName = "openai"

// ChatAPI is the wire format name of Chat Completions, reported on errors
// (llm.APIError.API) as ResponsesAPI is for the Responses API.
const ChatAPI = "openai"

// defaultBaseURL is where calls go when Config.BaseURL is empty (the SDK's
// production environment).
const defaultBaseURL = "https://api.openai.com/v1"

// Config configures a Provider.
type Config struct {
	// Name is the provider name reported in errors and status lines
	// ("openai", "openrouter", ...); default "openai".
	Name string
	// BaseURL is the API root, e.g. https://api.openai.com/v1 or
	// http://127.0.0.1:PORT/v1; default https://api.openai.com/v1.
	BaseURL string
	// APIKey is the default key; llm.Request.APIKey overrides it per call.
	// With neither set no Authorization header is sent (local servers).
	APIKey string
	// HTTPClient is optional; the default (llm.NewHTTPClient) has no
	// overall timeout (streams are long) but bounds the wait for response
	// headers and the silence inside a stream by Timeouts.
	HTTPClient *http.Client
	// Timeouts configures the default client; ignored with HTTPClient.
	Timeouts llm.Timeouts
	// Headers are extra headers on every request.
	Headers map[string]string
	// MaxTokensField (Chat Completions) names the field that carries
	// llm.Request.MaxTokens:
	// FieldMaxTokens (the default, because every OpenAI-compatible server
	// understands it) or FieldMaxCompletionTokens (OpenAI reasoning models).
	// Any other value means the default.
	MaxTokensField string
	// ReasoningEffort and ReasoningSummary are sent as reasoning.effort and
	// reasoning.summary by NewResponses' provider when set.
	ReasoningEffort, ReasoningSummary string
	// NoReasoningReplay (Responses) is the kill switch of reasoning replay:
	// encrypted reasoning is neither requested nor sent back.
	NoReasoningReplay bool
	// NativeCompaction (Responses) opts in to server-side compaction
	// (context_management with CompactThreshold), sent only to the model
	// families that support it on CompactionHosts (default api.openai.com).
	// A structured rejection turns it off for this provider and the call
	// is retried once without it.
	NativeCompaction bool
	CompactThreshold int
	CompactionHosts  []string
}

// conn is what both APIs share: the provider's name, the wire format and
// endpoint its errors report, and the SDK client that sends its calls.
type conn struct {
	name    string
	api     string
	baseURL string
	client  oai.Client
}

// Name returns the configured provider name.
func (c *conn) Name() string { return c.name }

// post sends body to path, with apiKey (when set) over the configured key.
// capt holds the HTTP answer for the error report; a failed call's
// response is already closed.
func (c *conn) post(ctx context.Context, path string, body []byte, apiKey string) (resp *http.Response, capt *capture, err error) {
	capt = &capture{}
	opts := []option.RequestOption{option.WithMiddleware(capt.middleware)}
	if apiKey != "" {
		opts = append(opts, option.WithAPIKey(apiKey))
	}
	if err := c.client.Post(ctx, path, body, &resp, opts...); err != nil {
		if resp != nil && resp.Body != nil {
			_ = resp.Body.Close()
		}
		return nil, capt, err
	}
	return resp, capt, nil
}

// Chat is an llm.Provider for Chat Completions endpoints (POST
// /chat/completions, api: openai). It is safe for concurrent use.
type Chat struct {
	conn
	maxCompletionTokens bool
	// tools is the tool list validated and encoded once.
	tools toolcache.Cache
}

// Responses is an llm.Provider for the Responses API (POST /responses,
// api: openai-responses). It is safe for concurrent use.
type Responses struct {
	conn
	options    responsesOptions
	compaction compactionOptions
	// compactionOff lists the sessions whose endpoint refused
	// context_management: native compaction stays off for them only.
	compactionOff refusals
	// tools is the tool list validated and encoded once.
	tools toolcache.Cache
}

var (
	_ llm.Provider = (*Chat)(nil)
	_ llm.Provider = (*Responses)(nil)
)

// NewChat builds a Chat Completions provider. Neither constructor reads
// OPENAI_* environment variables: keys and endpoints come from cfg only, so
// a key meant for one endpoint is never sent to another.
func NewChat(cfg Config) *Chat {
	return &Chat{
		conn:                newConn(cfg, ChatAPI),
		maxCompletionTokens: strings.EqualFold(strings.TrimSpace(cfg.MaxTokensField), FieldMaxCompletionTokens),
	}
}

// NewResponses builds a Responses API provider.
func NewResponses(cfg Config) *Responses {
	return &Responses{
		conn:    newConn(cfg, ResponsesAPI),
		options: responsesOptions{effort: cfg.ReasoningEffort, summary: cfg.ReasoningSummary, replay: !cfg.NoReasoningReplay},
		compaction: compactionOptions{on: cfg.NativeCompaction, threshold: cfg.CompactThreshold,
			hosts: slices.Clone(cfg.CompactionHosts), base: cmp.Or(cfg.BaseURL, defaultBaseURL)},
	}
}

func newConn(cfg Config, api string) conn {
	name := cfg.Name
	if name == "" {
		name = DefaultName
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = llm.NewHTTPClient(cfg.Timeouts)
	}
	opts := []option.RequestOption{
		option.WithEnvironmentProduction(),
		option.WithHTTPClient(hc),
		// Talaria's retry loop owns retries; the SDK must make exactly one
		// request per call.
		option.WithMaxRetries(0),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	keys := make([]string, 0, len(cfg.Headers))
	for k := range cfg.Headers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		opts = append(opts, option.WithHeader(k, cfg.Headers[k]))
	}
	// Built directly rather than with oai.NewClient, which would merge
	// OPENAI_API_KEY, OPENAI_ORG_ID, ... from the environment into
	// requests sent to whatever endpoint this provider points at.
	return conn{name: name, api: api, baseURL: cmp.Or(cfg.BaseURL, defaultBaseURL), client: oai.Client{Options: opts}}
}

// encode is the full encoder, or the incremental one when the request
// carries a wire cache (Chat Completions or Responses, as the caller
// passes); then release, called once the call is over, hands the body back
// to the cache if the transport wrote all of it (it may read a body after
// the answer has come, when the server answered before reading it all).
func encode(ctx context.Context, req *llm.Request, full func() ([]byte, error), incremental func() ([]byte, string, error)) (_ context.Context, body []byte, release func(), err error) {
	if req.Wire == nil {
		body, err = full()
		return ctx, body, func() {}, err
	}
	body, key, err := incremental()
	if err != nil {
		return ctx, nil, func() {}, err
	}
	ctx, release = req.Wire.ReleaseAfterWrite(ctx, key, body)
	return ctx, body, release, nil
}

// Stream sends req as a streaming Chat Completions call and yields the answer
// as it arrives, following the closing rule of llm.Provider: exactly one
// EventDone with a nil error, or one non-nil *llm.APIError, ends the
// sequence. Breaking out of the loop closes the connection before Stream's
// iterator returns.
func (p *Chat) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		if req == nil {
			yield(llm.Event{}, p.localError("", "nil request"))
			return
		}
		ctx, body, release, err := encode(ctx, req,
			func() ([]byte, error) { return encodeRequest(req, p.maxCompletionTokens) },
			func() ([]byte, string, error) { return encodeIncremental(req, p.maxCompletionTokens, &p.tools) })
		if err != nil {
			yield(llm.Event{}, p.localError(req.Model, err.Error()))
			return
		}
		defer release()
		resp, capt, err := p.post(ctx, "chat/completions", body, req.APIKey)
		if err != nil {
			yield(llm.Event{}, p.requestError(ctx, req.Model, err, capt))
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			yield(llm.Event{}, p.requestError(ctx, req.Model, nil, capt))
			return
		}
		r := &reader{p: &p.conn, model: req.Model, header: resp.Header}
		if isJSON(resp.Header.Get("Content-Type")) {
			// Some servers ignore stream:true and answer with one JSON
			// object; take it rather than failing the turn.
			r.readJSON(ctx, resp, yield)
			return
		}
		r.readSSE(ctx, resp, yield)
	}
}
