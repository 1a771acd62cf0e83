package openai

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	oai "github.com/openai/openai-go/v3"

	"github.com/talaria-agent/talaria/llm"
)

const rateLimitBody = `{
    "error": {
        "message": "Rate limit reached for gpt-4o-mini in organization org-abc on tokens per min (TPM): Limit 200000, Used 199500, Requested 1200. Please try again in 210ms.",
        "type": "tokens",
        "param": null,
        "code": "rate_limit_exceeded"
    }
}`

func TestHTTP429(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "7")
		w.Header().Set("retry-after-ms", "6500")
		w.Header().Set("x-ratelimit-remaining-tokens", "500")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, rateLimitBody)
	})
	p := fs.provider(Config{Name: "openrouter", APIKey: "sk-test"})
	_, _, err := collect(t, p.Stream(context.Background(), simpleRequest()))
	ae := asAPIError(t, err)

	if n := len(fs.requests()); n != 1 {
		t.Fatalf("server saw %d requests, want exactly 1 (SDK retries must be off)", n)
	}
	if ae.StatusCode != 429 || ae.Provider != "openrouter" || ae.Model != "gpt-4o-mini" {
		t.Errorf("status/provider/model = %d/%q/%q", ae.StatusCode, ae.Provider, ae.Model)
	}
	if got := ae.Header.Get("Retry-After"); got != "7" {
		t.Errorf("Retry-After header = %q", got)
	}
	if got := ae.Header.Get("x-ratelimit-remaining-tokens"); got != "500" {
		t.Errorf("x-ratelimit-remaining-tokens = %q", got)
	}
	if d, ok := ae.RetryAfter(time.Now()); !ok || d != 6500*time.Millisecond {
		t.Errorf("RetryAfter = %v, %v; want 6.5s from retry-after-ms", d, ok)
	}
	if string(ae.Body) != rateLimitBody {
		t.Errorf("Body = %q, want the raw body", ae.Body)
	}
	if !strings.HasPrefix(ae.Message, "Rate limit reached for gpt-4o-mini") {
		t.Errorf("Message = %q, want the provider's error.message", ae.Message)
	}
	if ae.Transport != llm.TransportNone || ae.MidStream {
		t.Errorf("transport = %q, midstream = %v", ae.Transport, ae.MidStream)
	}
	var sdkErr *oai.Error
	if !errors.As(err, &sdkErr) || sdkErr.StatusCode != 429 {
		t.Errorf("underlying error %v is not the SDK's *openai.Error", ae.Err)
	}
}

func TestHTTPErrorBodies(t *testing.T) {
	big := `{"error":{"message":"` + strings.Repeat("x", 100<<10) + `"}}`
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		wantMessage string // "" means: any non-empty text
		wantBodyLen int
	}{
		{"500 plain text", 500, "text/plain", "upstream connect error or disconnect/reset before headers", "", -1},
		{"502 HTML from a proxy", 502, "text/html", "<html><body><h1>502 Bad Gateway</h1></body></html>", "", -1},
		{"500 empty body", 500, "", "", "", -1},
		{"503 vLLM shape", 503, "application/json", `{"object":"error","message":"The model is overloaded","type":"ServiceUnavailableError","param":null,"code":503}`, "The model is overloaded", -1},
		{"404 Ollama shape", 404, "application/json", `{"error":"model \"llama3\" not found, try pulling it first"}`, `model "llama3" not found, try pulling it first`, -1},
		{"404 FastAPI detail", 404, "application/json", `{"detail":"Not Found"}`, "Not Found", -1},
		{"400 OpenRouter nested", 400, "application/json", `{"error":{"message":"Provider returned error","code":400,"metadata":{"raw":"{\"error\":{\"message\":\"prompt is too long\"}}","provider_name":"Anthropic"}}}`, "Provider returned error", -1},
		{"huge body is capped", 500, "application/json", big, "", maxErrorBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
				if tt.contentType != "" {
					w.Header().Set("Content-Type", tt.contentType)
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			_, _, err := collect(t, fs.provider(Config{}).Stream(context.Background(), simpleRequest()))
			ae := asAPIError(t, err)
			if n := len(fs.requests()); n != 1 {
				t.Errorf("server saw %d requests, want 1", n)
			}
			if ae.StatusCode != tt.status {
				t.Errorf("StatusCode = %d, want %d", ae.StatusCode, tt.status)
			}
			if tt.wantBodyLen >= 0 {
				if len(ae.Body) != tt.wantBodyLen {
					t.Errorf("len(Body) = %d, want %d", len(ae.Body), tt.wantBodyLen)
				}
			} else if string(ae.Body) != tt.body {
				t.Errorf("Body = %q, want %q", ae.Body, tt.body)
			}
			if tt.wantMessage != "" && ae.Message != tt.wantMessage {
				t.Errorf("Message = %q, want %q", ae.Message, tt.wantMessage)
			}
			if ae.Message == "" {
				t.Error("Message is empty")
			}
			if ae.Transport != llm.TransportNone {
				t.Errorf("Transport = %q", ae.Transport)
			}
			var sdkErr *oai.Error
			if !errors.As(err, &sdkErr) || sdkErr.StatusCode != tt.status {
				t.Errorf("Err = %T %v, want an *openai.Error with the status", ae.Err, ae.Err)
			}
		})
	}
}

// dropAfter writes payloads, waits until the client has read them (so the
// kernel cannot discard them on reset), then kills the connection: closed
// (linger -1) or reset (linger 0).
func dropAfter(linger int, proceed <-chan struct{}, payloads ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, p := range payloads {
			writeEvent(w, p)
		}
		select {
		case <-proceed:
		case <-time.After(10 * time.Second):
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok && linger >= 0 {
			_ = tc.SetLinger(linger)
		}
		_ = conn.Close()
	}
}

func TestMidStreamFailures(t *testing.T) {
	tests := []struct {
		name      string
		handler   func(proceed <-chan struct{}) http.HandlerFunc
		transport []llm.TransportKind // any of
	}{
		{
			name: "connection closed mid-body",
			handler: func(p <-chan struct{}) http.HandlerFunc {
				return dropAfter(-1, p, textChunk("Hello "), textChunk("wor"))
			},
			transport: []llm.TransportKind{llm.TransportEOF},
		},
		{
			name: "connection reset mid-body",
			handler: func(p <-chan struct{}) http.HandlerFunc {
				return dropAfter(0, p, textChunk("Hello "), textChunk("wor"))
			},
			// Loopback usually reports ECONNRESET; a reset that lands
			// between reads can surface as an unexpected EOF instead.
			transport: []llm.TransportKind{llm.TransportReset, llm.TransportEOF},
		},
		{
			name: "clean end without finish_reason or [DONE]",
			handler: func(<-chan struct{}) http.HandlerFunc {
				return sse(textChunk("Hello "), textChunk("wor"))
			},
			transport: []llm.TransportKind{llm.TransportEOF},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proceed := make(chan struct{})
			fs := newFakeServer(t, tt.handler(proceed))
			var text strings.Builder
			var err error
			for ev, e := range fs.provider(Config{}).Stream(context.Background(), simpleRequest()) {
				if e != nil {
					err = e
					break
				}
				if ev.Type == llm.EventDone {
					t.Fatalf("stream succeeded: %+v", ev.Response)
				}
				text.WriteString(ev.Text)
				if text.String() == "Hello wor" {
					close(proceed)
				}
			}
			ae := asAPIError(t, err)
			t.Logf("transport %q: %v", ae.Transport, ae.Err)
			if !ae.MidStream || ae.PartialText != "Hello wor" {
				t.Errorf("MidStream = %v, PartialText = %q", ae.MidStream, ae.PartialText)
			}
			ok := false
			for _, k := range tt.transport {
				ok = ok || ae.Transport == k
			}
			if !ok {
				t.Errorf("Transport = %q, want one of %v (err %v)", ae.Transport, tt.transport, ae.Err)
			}
			if ae.Provider != "openai" || ae.Model != "gpt-4o-mini" {
				t.Errorf("provider/model = %q/%q", ae.Provider, ae.Model)
			}
		})
	}
}

// An answer whose finish_reason arrived is complete even if the trailing
// usage chunk and [DONE] are lost.
func TestDropAfterFinishIsSuccess(t *testing.T) {
	proceed := make(chan struct{})
	close(proceed)
	_, resp, err := run(t, dropAfter(-1, proceed, textChunk("all"), chunk(`{}`, "stop")))
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if resp.Message.Text() != "all" || resp.FinishReason != llm.FinishStop || resp.Usage.Reported {
		t.Errorf("response = %+v", resp)
	}
}

func TestInStreamError(t *testing.T) {
	openRouterErr := `{"id":"gen-1","object":"chat.completion.chunk","created":1700000000,"model":"anthropic/claude-sonnet-4","provider":"Anthropic","error":{"code":502,"message":"Provider disconnected unexpectedly"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`
	vllmErr := `{"error":{"object":"error","message":"max_model_len exceeded","type":"BadRequestError","param":null,"code":"context_length_exceeded"}}`
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		wantBody   string
		wantMsg    string
		wantStatus int
	}{
		{"OpenRouter error chunk", sse(textChunk("Hel"), textChunk("lo"), openRouterErr), openRouterErr, "Provider disconnected unexpectedly", 502},
		{"vLLM error object", sse(textChunk("Hel"), textChunk("lo"), vllmErr, done), vllmErr, "max_model_len exceeded", 0},
		{
			"event: error",
			func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				writeEvent(w, textChunk("Hel"))
				writeEvent(w, textChunk("lo"))
				_, _ = io.WriteString(w, "event: error\ndata: {\"message\":\"overloaded\",\"code\":529}\n\n")
			},
			`{"message":"overloaded","code":529}`, "overloaded", 529,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, _, err := run(t, tt.handler)
			ae := asAPIError(t, err)
			if string(ae.Body) != tt.wantBody {
				t.Errorf("Body = %s, want %s", ae.Body, tt.wantBody)
			}
			if ae.Message != tt.wantMsg || ae.StatusCode != tt.wantStatus {
				t.Errorf("Message = %q, StatusCode = %d; want %q, %d", ae.Message, ae.StatusCode, tt.wantMsg, tt.wantStatus)
			}
			if !ae.MidStream || ae.PartialText != "Hello" {
				t.Errorf("MidStream = %v, PartialText = %q", ae.MidStream, ae.PartialText)
			}
			if got := textOf(evs, llm.EventTextDelta); got != "Hello" {
				t.Errorf("streamed %q before the error", got)
			}
			if ae.Header.Get("Content-Type") != "text/event-stream" {
				t.Errorf("Header = %v, want the stream's response headers", ae.Header)
			}
		})
	}
}

func TestMalformedChunk(t *testing.T) {
	_, _, err := run(t, sse(textChunk("a"), `{"choices":[{"delta":{"content":`, done))
	ae := asAPIError(t, err)
	if !ae.MidStream || ae.PartialText != "a" || !strings.Contains(ae.Message, "malformed") {
		t.Errorf("error = %+v", ae)
	}
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	p := NewChat(Config{BaseURL: "http://" + addr + "/v1"})
	_, _, err = collect(t, p.Stream(context.Background(), simpleRequest()))
	ae := asAPIError(t, err)
	if ae.Transport != llm.TransportConnect || ae.StatusCode != 0 || ae.MidStream {
		t.Errorf("Transport = %q, StatusCode = %d, MidStream = %v (err %v)", ae.Transport, ae.StatusCode, ae.MidStream, ae.Err)
	}
	if ae.Message == "" || ae.Err == nil {
		t.Errorf("Message = %q, Err = %v", ae.Message, ae.Err)
	}
}

func TestUntrustedCertificate(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the rejected handshake is expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	p := NewChat(Config{BaseURL: srv.URL + "/v1"}) // default client: does not trust the test CA
	_, _, err := collect(t, p.Stream(context.Background(), simpleRequest()))
	if ae := asAPIError(t, err); ae.Transport != llm.TransportTLSCert {
		t.Errorf("Transport = %q, want tls-cert (err %v)", ae.Transport, ae.Err)
	}
}

func TestCancelMidStream(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		writeEvent(w, textChunk("Hel"))
		select { // hang like a slow model until the client goes away
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		err   error
		items int
	)
	within(t, 5*time.Second, func() {
		for ev, e := range fs.provider(Config{}).Stream(ctx, simpleRequest()) {
			items++
			if e != nil {
				err = e
				continue
			}
			if ev.Type == llm.EventTextDelta {
				cancel()
			}
		}
	})
	ae := asAPIError(t, err)
	if ae.Transport != llm.TransportCanceled || !errors.Is(err, context.Canceled) {
		t.Errorf("Transport = %q, errors.Is(Canceled) = %v (err %v)", ae.Transport, errors.Is(err, context.Canceled), err)
	}
	if !ae.MidStream || ae.PartialText != "Hel" || items != 2 {
		t.Errorf("MidStream = %v, PartialText = %q, items = %d", ae.MidStream, ae.PartialText, items)
	}
}

func TestCanceledBeforeStart(t *testing.T) {
	fs := newFakeServer(t, sse(textChunk("x"), chunk(`{}`, "stop"), done))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := collect(t, fs.provider(Config{}).Stream(ctx, simpleRequest()))
	ae := asAPIError(t, err)
	if ae.Transport != llm.TransportCanceled || !errors.Is(err, context.Canceled) || ae.MidStream {
		t.Errorf("error = %+v", ae)
	}
}

func TestDeadlineIsTimeout(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		writeEvent(w, textChunk("Hel"))
		<-r.Context().Done()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var err error
	within(t, 5*time.Second, func() {
		for _, e := range fs.provider(Config{}).Stream(ctx, simpleRequest()) {
			if e != nil {
				err = e
			}
		}
	})
	ae := asAPIError(t, err)
	if ae.Transport != llm.TransportTimeout || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Transport = %q (err %v)", ae.Transport, err)
	}
}

func TestEarlyBreakClosesConnection(t *testing.T) {
	gone := make(chan struct{})
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		writeEvent(w, textChunk("first"))
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(30 * time.Second):
		}
	})
	within(t, 5*time.Second, func() {
		for range fs.provider(Config{}).Stream(context.Background(), simpleRequest()) {
			break
		}
	})
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("server never saw the client go away after break")
	}
}

func TestAuthAndHeaders(t *testing.T) {
	tests := []struct {
		name     string
		cfgKey   string
		reqKey   string
		wantAuth string
	}{
		{"configured key", "sk-config", "", "Bearer sk-config"},
		{"per-request key overrides", "sk-config", "sk-rotated", "Bearer sk-rotated"},
		{"per-request key without a configured one", "", "sk-only", "Bearer sk-only"},
		{"no key sends no Authorization (local servers)", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// An ambient key must never reach a configured endpoint.
			t.Setenv("OPENAI_API_KEY", "sk-from-env")
			t.Setenv("OPENAI_ORG_ID", "org-from-env")
			fs := newFakeServer(t, sse(chunk(`{}`, "stop"), done))
			p := fs.provider(Config{
				Name:    "openrouter",
				APIKey:  tt.cfgKey,
				Headers: map[string]string{"HTTP-Referer": "https://talaria.dev", "X-Title": "Talaria"},
			})
			req := simpleRequest()
			req.APIKey = tt.reqKey
			if _, _, err := collect(t, p.Stream(context.Background(), req)); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			h := fs.requests()[0].header
			if got := h.Get("Authorization"); got != tt.wantAuth {
				t.Errorf("Authorization = %q, want %q", got, tt.wantAuth)
			}
			if h.Get("HTTP-Referer") != "https://talaria.dev" || h.Get("X-Title") != "Talaria" {
				t.Errorf("extra headers missing: %v", h)
			}
			if h.Get("OpenAI-Organization") != "" {
				t.Errorf("environment leaked into the request: %v", h)
			}
			if ct := h.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if p.Name() != "openrouter" {
				t.Errorf("Name = %q", p.Name())
			}
		})
	}
}

func TestDefaultName(t *testing.T) {
	if got := NewChat(Config{}).Name(); got != "openai" {
		t.Errorf("Name = %q, want openai", got)
	}
}

func TestNilRequest(t *testing.T) {
	_, _, err := collect(t, NewChat(Config{}).Stream(context.Background(), nil))
	asAPIError(t, err)
}
