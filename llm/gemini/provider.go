// Package gemini implements llm.Provider over Google's Gemini API
// (generateContent, streamed as SSE) through google.golang.org/genai.
//
// The SDK sends the call (URL, API version, key and client headers,
// streaming, its error shapes), but the adapter encodes the request body
// itself, byte for byte what the SDK would send for the same request (the
// tests check it against the SDK), so that a long session's body is built
// incrementally (llm.WireCache): the SDK is handed an empty request and
// the transport puts the adapter's body in its place.
//
// Gemini has no tool call ids: function responses are matched to calls by
// name and order, so the adapter sends each tool-result turn in the order
// of the calls it answers. Thought signatures (opaque bytes on a model
// turn's first function call or text part) are stored with the assistant
// message and sent back on the same parts; a model turn of the current
// turn that has none (it came from another provider after a fallback)
// carries Google's documented skip value instead, since a signature cannot
// be made up.
package gemini

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"iter"
	"maps"
	"net/http"
	"slices"
	"strings"

	"google.golang.org/genai"

	"github.com/talaria-agent/talaria/llm"
)

// API is the wire format name stamped on replay state (llm.Reasoning.API).
const API = "gemini"

// DefaultBaseURL is the Gemini API's server root.
const DefaultBaseURL = "https://generativelanguage.googleapis.com/"

// Config configures a Provider.
type Config struct {
	// Name is the provider name in errors and status lines; default "gemini".
	Name string
	// BaseURL is the server root without /v1beta (the SDK adds the version).
	BaseURL string
	// APIKey is the default key, sent as x-goog-api-key; llm.Request.APIKey
	// overrides it per call.
	APIKey string
	// HTTPClient sends the requests; nil uses a client with its own pool.
	HTTPClient *http.Client
	// Headers are extra request headers.
	Headers map[string]string
	// ThinkingBudget asks for thinking with this budget (thoughts included
	// in the stream); ModelThinking overrides it per model. 0 leaves the
	// model's default.
	ThinkingBudget int
	ModelThinking  map[string]int
}

// Provider is the Gemini adapter. It is safe for concurrent use.
type Provider struct {
	name     string
	client   *genai.Client
	budget   int
	perModel map[string]int
	// tools is the tool list validated and encoded once while unchanged.
	tools llm.ToolCache
}

var _ llm.Provider = (*Provider)(nil)

// New builds a Provider. Only cfg decides where calls go: the SDK's
// GOOGLE_* / GEMINI_* environment defaults are overridden.
func New(cfg Config) (*Provider, error) {
	name := cfg.Name
	if name == "" {
		name = API
	}
	base := strings.TrimSpace(cfg.BaseURL)
	if base == "" {
		base = DefaultBaseURL
	}
	// The SDK appends "v1beta/..."; a root given with the version is
	// tolerated.
	base = strings.TrimSuffix(strings.TrimRight(base, "/"), "/v1beta") + "/"
	hc := cfg.HTTPClient
	if hc == nil {
		hc = llm.NewHTTPClient(llm.Timeouts{})
	}
	inner := hc.Transport
	if inner == nil {
		inner = http.DefaultTransport
	}
	wrapped := *hc
	wrapped.Transport = &capturingTransport{base: inner}
	headers := http.Header{}
	for _, k := range slices.Sorted(maps.Keys(cfg.Headers)) {
		headers.Set(k, cfg.Headers[k])
	}
	key := cfg.APIKey
	if key == "" {
		// The SDK insists on a key for the Gemini backend; local servers
		// need none, so an inert one is sent.
		key = "no-key"
	}
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      key,
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  &wrapped,
		HTTPOptions: genai.HTTPOptions{BaseURL: base, APIVersion: "v1beta", Headers: headers},
	})
	if err != nil {
		return nil, fmt.Errorf("gemini client: %w", err)
	}
	return &Provider{name: name, client: client, budget: cfg.ThinkingBudget, perModel: maps.Clone(cfg.ModelThinking)}, nil
}

// Name returns the configured provider name.
func (p *Provider) Name() string { return p.name }

func (p *Provider) budgetFor(model string) int {
	if b, ok := p.perModel[model]; ok {
		return max(b, 0)
	}
	return max(p.budget, 0)
}

// Stream sends req as streamGenerateContent and yields the answer; see
// llm.Provider for the closing rule. Every error is an *llm.APIError.
func (p *Provider) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		if req == nil {
			yield(llm.Event{}, &llm.APIError{Provider: p.name, Message: "nil request", Err: errInvalid})
			return
		}
		var body []byte
		var err error
		budget := p.budgetFor(req.Model)
		if req.Wire != nil {
			var key string
			body, key, err = encodeIncremental(req, budget, &p.tools)
			if err == nil {
				var release func()
				ctx, release = req.Wire.ReleaseAfterWrite(ctx, key, body)
				defer release()
			}
		} else {
			body, err = encodeRequest(req, budget, &p.tools)
		}
		if err != nil {
			yield(llm.Event{}, &llm.APIError{Provider: p.name, Model: req.Model, Message: err.Error(), Err: err})
			return
		}
		cs := &callState{key: req.APIKey, request: body}
		ctx, cancel := context.WithCancel(context.WithValue(ctx, callKey{}, cs))
		defer cancel()
		// The SDK sends the call (URL, version, key and client headers,
		// streaming, its error shapes) with an empty request; the
		// transport puts the adapter's body in its place.
		off := false
		config := &genai.GenerateContentConfig{AutomaticContinuation: &off}
		asm := &assembler{reqModel: req.Model}
		for resp, err := range p.client.Models.GenerateContentStream(ctx, req.Model, nil, config) {
			if err != nil {
				yield(llm.Event{}, p.streamError(ctx, req.Model, cs, asm, err))
				return
			}
			for _, ev := range asm.feed(resp) {
				if !yield(ev, nil) {
					return
				}
			}
			if asm.blocked {
				break
			}
		}
		if ctx.Err() != nil {
			yield(llm.Event{}, p.streamError(ctx, req.Model, cs, asm, ctx.Err()))
			return
		}
		if !asm.finished() {
			yield(llm.Event{}, p.streamError(ctx, req.Model, cs, asm, errNoFinish))
			return
		}
		yield(llm.Event{Type: llm.EventDone, Response: asm.response()}, nil)
	}
}

// callKey carries a call's callState through the SDK to the transport.
type callKey struct{}

// callState is one call's key override, its request body, and the raw
// HTTP answer when it was an error: the SDK keeps only the parsed message,
// and the classifier needs the body and headers.
type callState struct {
	key     string
	request []byte
	status  int
	header  http.Header
	body    []byte
}

// maxErrorBody caps a kept error body.
const maxErrorBody = 64 << 10

type capturingTransport struct{ base http.RoundTripper }

func (t *capturingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	cs, _ := r.Context().Value(callKey{}).(*callState)
	if cs != nil && (cs.key != "" || cs.request != nil) {
		r = r.Clone(r.Context())
		if cs.key != "" {
			r.Header.Set("x-goog-api-key", cs.key)
		}
		if body := cs.request; body != nil {
			if r.Body != nil {
				_ = r.Body.Close()
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
			r.ContentLength = int64(len(body))
		}
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil || cs == nil {
		return resp, err
	}
	cs.status, cs.header = resp.StatusCode, resp.Header.Clone()
	if resp.StatusCode >= 300 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		_ = resp.Body.Close()
		cs.body = body
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	return resp, nil
}
