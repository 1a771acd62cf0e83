// Package gemini implements llm.Provider over Google's Gemini API
// (streamGenerateContent, streamed as SSE).
//
// The adapter sends the call itself (client.go: URL, API version, key and
// client headers, SSE framing, error shapes) and encodes the request body
// itself, byte for byte the request google.golang.org/genai sent for the
// same call (the tests check body and headers against the SDK, which is a
// test-only dependency: its Google auth stack would pull gRPC into every
// binary), so that a long session's body is built incrementally
// (llm.WireCache).
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
	"cmp"
	"context"
	"iter"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/toolcache"
)

// API is the wire format name stamped on replay state (llm.Reasoning.API)
// and on errors (llm.APIError.API).
const API = "gemini"

// DefaultBaseURL is the Gemini API's server root.
const DefaultBaseURL = "https://generativelanguage.googleapis.com/"

// Config configures a Provider.
type Config struct {
	// Name is the provider name in errors and status lines; default "gemini".
	Name string
	// BaseURL is the server root without /v1beta (the adapter adds the
	// version).
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
	baseURL  string // as configured, or DefaultBaseURL; reported on errors
	client   *client
	budget   int
	perModel map[string]int
	// tools is the tool list validated and encoded once while unchanged.
	tools toolcache.Cache
}

var _ llm.Provider = (*Provider)(nil)

// New builds a Provider. Only cfg decides where calls go (no GOOGLE_* /
// GEMINI_* environment defaults are read).
func New(cfg Config) (*Provider, error) {
	name := cfg.Name
	if name == "" {
		name = API
	}
	configured := cmp.Or(strings.TrimSpace(cfg.BaseURL), DefaultBaseURL)
	// The adapter appends "v1beta/..."; a root given with the version is
	// tolerated.
	base := strings.TrimSuffix(strings.TrimRight(configured, "/"), "/v1beta") + "/"
	hc := cfg.HTTPClient
	if hc == nil {
		hc = llm.NewHTTPClient(llm.Timeouts{})
	}
	headers := http.Header{}
	for _, k := range slices.Sorted(maps.Keys(cfg.Headers)) {
		headers.Set(k, cfg.Headers[k])
	}
	key := cfg.APIKey
	if key == "" {
		// The SDK insisted on a key for the Gemini backend and sent an
		// inert one for local servers that need none; the wire stays so.
		key = "no-key"
	}
	client, err := newClient(base, key, hc, headers)
	if err != nil {
		return nil, err
	}
	return &Provider{name: name, baseURL: configured, client: client, budget: cfg.ThinkingBudget, perModel: maps.Clone(cfg.ModelThinking)}, nil
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
			e := p.newError("", errInvalid)
			e.Message = "nil request"
			yield(llm.Event{}, e)
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
			e := p.newError(req.Model, err)
			e.Message = err.Error()
			yield(llm.Event{}, e)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		asm := &assembler{reqModel: req.Model}
		header, chunks, err := p.client.stream(ctx, req.Model, req.APIKey, body)
		if err != nil {
			yield(llm.Event{}, p.streamError(ctx, req.Model, header, false, asm, err))
			return
		}
		for resp, err := range chunks {
			if err != nil {
				yield(llm.Event{}, p.streamError(ctx, req.Model, header, true, asm, err))
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
			yield(llm.Event{}, p.streamError(ctx, req.Model, header, true, asm, ctx.Err()))
			return
		}
		if !asm.finished() {
			yield(llm.Event{}, p.streamError(ctx, req.Model, header, true, asm, errNoFinish))
			return
		}
		yield(llm.Event{Type: llm.EventDone, Response: asm.response()}, nil)
	}
}

// maxErrorBody caps a kept error body.
const maxErrorBody = 64 << 10
