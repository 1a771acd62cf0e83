package anthropic

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
)

func TestHTTPErrors(t *testing.T) {
	const rateLimitBody = `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 50 requests per minute."},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`
	const overloadedBody = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fz"}`
	const htmlBody = "<html><body><h1>502 Bad Gateway</h1></body></html>"
	tests := []struct {
		name        string
		status      int
		body        string
		headers     map[string]string
		wantMessage string // exact, or a substring when wantContains
		contains    bool
		wantRetry   time.Duration
		wantHeader  map[string]string
	}{
		{
			name:   "429 with retry-after",
			status: 429,
			body:   rateLimitBody,
			headers: map[string]string{
				"retry-after":                            "7",
				"anthropic-ratelimit-requests-limit":     "50",
				"anthropic-ratelimit-requests-remaining": "0",
				"x-should-retry":                         "true", // the SDK must still not retry
			},
			wantMessage: "This request would exceed the rate limit for your organization of 50 requests per minute.",
			wantRetry:   7 * time.Second,
			wantHeader:  map[string]string{"anthropic-ratelimit-requests-remaining": "0"},
		},
		{
			name:        "529 overloaded",
			status:      529,
			body:        overloadedBody,
			headers:     map[string]string{"retry-after-ms": "1500"},
			wantMessage: "Overloaded",
			wantRetry:   1500 * time.Millisecond,
		},
		{
			name:        "502 with an HTML body keeps the SDK text",
			status:      502,
			body:        htmlBody,
			headers:     map[string]string{"Content-Type": "text/html"},
			wantMessage: "502 Bad Gateway",
			contains:    true,
		},
		{
			name:        "400 with a JSON array body the SDK cannot parse",
			status:      400,
			body:        `[{"error":"bad"}]`,
			wantMessage: "400",
			contains:    true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, jsonError(tt.status, tt.body, tt.headers))
			req := simpleRequest()
			_, _, err := run(t, api.provider(), t.Context(), req)
			ae := mustAPIError(t, err)
			if ae.StatusCode != tt.status {
				t.Errorf("StatusCode = %d, want %d", ae.StatusCode, tt.status)
			}
			if ae.Model != req.Model {
				t.Errorf("Model = %q", ae.Model)
			}
			if string(ae.Body) != tt.body {
				t.Errorf("Body = %q, want %q", ae.Body, tt.body)
			}
			if tt.contains {
				if !strings.Contains(ae.Message, tt.wantMessage) {
					t.Errorf("Message = %q, want it to contain %q", ae.Message, tt.wantMessage)
				}
			} else if ae.Message != tt.wantMessage {
				t.Errorf("Message = %q, want %q", ae.Message, tt.wantMessage)
			}
			if ae.Transport != llm.TransportNone || ae.MidStream {
				t.Errorf("Transport/MidStream = %q/%v, want none/false", ae.Transport, ae.MidStream)
			}
			if d, ok := ae.RetryAfter(time.Now()); tt.wantRetry != 0 && (!ok || d != tt.wantRetry) {
				t.Errorf("RetryAfter = %v,%v want %v", d, ok, tt.wantRetry)
			}
			for k, v := range tt.wantHeader {
				if got := ae.Header.Get(k); got != v {
					t.Errorf("Header[%s] = %q, want %q", k, got, v)
				}
			}
			if got := api.calls.Load(); got != 1 {
				t.Errorf("HTTP requests = %d, want exactly 1 (SDK retries must be off)", got)
			}
		})
	}
}

func TestHTTPErrorBodyIsCapped(t *testing.T) {
	huge := `{"type":"error","error":{"type":"invalid_request_error","message":"` + strings.Repeat("x", 200<<10) + `"}}`
	api := newFakeAPI(t, jsonError(400, huge, nil))
	_, _, err := run(t, api.provider(), t.Context(), simpleRequest())
	ae := mustAPIError(t, err)
	if ae.StatusCode != 400 {
		t.Errorf("StatusCode = %d", ae.StatusCode)
	}
	if len(ae.Body) != maxErrorBody || string(ae.Body) != huge[:maxErrorBody] {
		t.Errorf("Body has %d bytes, want the first %d", len(ae.Body), maxErrorBody)
	}
	if len(ae.Message) > maxMessage+len("…") {
		t.Errorf("Message has %d bytes, want at most %d", len(ae.Message), maxMessage)
	}
}

func TestStreamErrorEvent(t *testing.T) {
	const errJSON = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	api := newFakeAPI(t, streamOf(
		messageStart(10, 0, 0), textStart(0), textDelta(0, "Hel"),
		sse("error", errJSON),
	))
	events, _, err := run(t, api.provider(), t.Context(), simpleRequest())
	ae := mustAPIError(t, err)
	if len(events) != 1 || events[0].Text != "Hel" {
		t.Errorf("events before the error = %+v", events)
	}
	if ae.StatusCode != 0 {
		t.Errorf("StatusCode = %d, want 0 (the 200 was already sent)", ae.StatusCode)
	}
	if string(ae.Body) != errJSON {
		t.Errorf("Body = %s", ae.Body)
	}
	if ae.Message != "Overloaded" || !ae.MidStream || ae.PartialText != "Hel" {
		t.Errorf("Message/MidStream/PartialText = %q/%v/%q", ae.Message, ae.MidStream, ae.PartialText)
	}
	if ae.Header.Get("request-id") != "req_test" {
		t.Errorf("Header lost: %v", ae.Header)
	}
}

func TestStreamBrokenEvents(t *testing.T) {
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		transport llm.TransportKind
		partial   string
		bodyHas   string
	}{
		{
			name: "connection dropped mid-stream",
			handler: func(w http.ResponseWriter, r *http.Request) {
				writeEvents(w, messageStart(10, 0, 0), textStart(0), textDelta(0, "partial "), textDelta(0, "answer"))
				// Abort: the server closes the connection without ending
				// the chunked body.
				panic(http.ErrAbortHandler)
			},
			transport: llm.TransportEOF,
			partial:   "partial answer",
		},
		{
			name:      "clean end without message_stop",
			handler:   streamOf(messageStart(10, 0, 0), textStart(0), textDelta(0, "cut"), blockStop(0), messageDelta("end_turn", 3)),
			transport: llm.TransportEOF,
			partial:   "cut",
		},
		{
			name:      "malformed event data",
			handler:   streamOf(messageStart(10, 0, 0), sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":`)),
			transport: llm.TransportNone,
			bodyHas:   `"delta":`,
		},
		{
			name:      "error event in an unknown shape",
			handler:   streamOf(messageStart(10, 0, 0), sse("error", `upstream exploded`)),
			transport: llm.TransportNone,
			bodyHas:   "upstream exploded",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, tt.handler)
			_, _, err := run(t, api.provider(), t.Context(), simpleRequest())
			ae := mustAPIError(t, err)
			if !ae.MidStream || ae.Transport != tt.transport || ae.PartialText != tt.partial {
				t.Errorf("MidStream/Transport/PartialText = %v/%q/%q, want true/%q/%q (%v)",
					ae.MidStream, ae.Transport, ae.PartialText, tt.transport, tt.partial, err)
			}
			if ae.StatusCode != 0 {
				t.Errorf("StatusCode = %d", ae.StatusCode)
			}
			if !strings.Contains(string(ae.Body), tt.bodyHas) {
				t.Errorf("Body = %q, want it to contain %q", ae.Body, tt.bodyHas)
			}
		})
	}
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := New(Config{BaseURL: "http://" + addr})
	_, _, err = run(t, p, t.Context(), simpleRequest())
	ae := mustAPIError(t, err)
	if ae.Transport != llm.TransportConnect || ae.StatusCode != 0 || ae.MidStream {
		t.Errorf("Transport/Status/MidStream = %q/%d/%v, want connect/0/false (%v)", ae.Transport, ae.StatusCode, ae.MidStream, err)
	}
	if ae.Message == "" || ae.Err == nil {
		t.Errorf("Message/Err empty: %q/%v", ae.Message, ae.Err)
	}
}

func TestUntrustedCertificate(t *testing.T) {
	srv := httptest.NewTLSServer(streamOf(textStream()...))
	t.Cleanup(srv.Close)
	// A client that does not trust the test server's certificate.
	p := New(Config{BaseURL: srv.URL, HTTPClient: &http.Client{}})
	_, _, err := run(t, p, t.Context(), simpleRequest())
	ae := mustAPIError(t, err)
	if ae.Transport != llm.TransportTLSCert {
		t.Errorf("Transport = %q, want tls-cert (%v)", ae.Transport, err)
	}
}

// blockingStream sends some text, then holds the stream open until the
// client goes away, reporting that on gone.
func blockingStream(gone chan<- struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeEvents(w, messageStart(10, 0, 0), textStart(0), textDelta(0, "first"), textDelta(0, " second"))
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(30 * time.Second):
		}
	}
}

func TestCancelMidStream(t *testing.T) {
	gone := make(chan struct{})
	api := newFakeAPI(t, blockingStream(gone))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	start := time.Now()
	var gotErr error
	var texts []string
	for ev, err := range api.provider().Stream(ctx, simpleRequest()) {
		if err != nil {
			gotErr = err
			break
		}
		texts = append(texts, ev.Text)
		cancel()
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Fatalf("cancelled stream took %v to end", elapsed)
	}
	ae := mustAPIError(t, gotErr)
	if ae.Transport != llm.TransportCanceled || !errors.Is(gotErr, context.Canceled) {
		t.Errorf("Transport = %q, errors.Is(Canceled) = %v: %v", ae.Transport, errors.Is(gotErr, context.Canceled), gotErr)
	}
	if !ae.MidStream || !strings.HasPrefix(ae.PartialText, "first") {
		t.Errorf("MidStream/PartialText = %v/%q", ae.MidStream, ae.PartialText)
	}
	if len(texts) == 0 || texts[0] != "first" {
		t.Errorf("texts before cancel = %q", texts)
	}
	waitGone(t, gone)
}

func TestCancelBeforeCall(t *testing.T) {
	api := newFakeAPI(t, streamOf(textStream()...))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err := run(t, api.provider(), ctx, simpleRequest())
	ae := mustAPIError(t, err)
	if ae.Transport != llm.TransportCanceled || !errors.Is(err, context.Canceled) || ae.MidStream {
		t.Errorf("Transport/MidStream = %q/%v: %v", ae.Transport, ae.MidStream, err)
	}
}

func TestDeadlineMidStream(t *testing.T) {
	gone := make(chan struct{})
	api := newFakeAPI(t, blockingStream(gone))
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, _, err := run(t, api.provider(), ctx, simpleRequest())
	ae := mustAPIError(t, err)
	if ae.Transport != llm.TransportTimeout || !errors.Is(err, context.DeadlineExceeded) || !ae.MidStream {
		t.Errorf("Transport/MidStream = %q/%v: %v", ae.Transport, ae.MidStream, err)
	}
	waitGone(t, gone)
}

func TestEarlyBreakClosesConnection(t *testing.T) {
	gone := make(chan struct{})
	api := newFakeAPI(t, blockingStream(gone))
	for ev, err := range api.provider().Stream(t.Context(), simpleRequest()) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Text != "first" {
			t.Errorf("first event = %+v", ev)
		}
		break
	}
	// The server only learns the client left if the connection closed.
	waitGone(t, gone)
}

func waitGone(t *testing.T, gone <-chan struct{}) {
	t.Helper()
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the server still holds the connection: it was not closed")
	}
}

func TestErrorMessage(t *testing.T) {
	tests := []struct {
		body, want string
	}{
		{`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, "prompt is too long: 210000 tokens > 200000 maximum"},
		{`{"error":"quota exceeded"}`, "quota exceeded"},
		{`{"message":"Internal server error"}`, "Internal server error"},
		{`{"error":{"code":500}}`, ""},
		{`<html>`, ""},
		{``, ""},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			if got := errorMessage([]byte(tt.body)); got != tt.want {
				t.Errorf("errorMessage = %q, want %q", got, tt.want)
			}
		})
	}
}

// A body that fails while the error response is read still yields the
// status and the part that arrived.
func TestHTTPErrorBodyReadFails(t *testing.T) {
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(500)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"api_error","message":"Inter`)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	_, _, err := run(t, api.provider(), t.Context(), simpleRequest())
	ae := mustAPIError(t, err)
	if ae.StatusCode != 500 || !strings.HasPrefix(string(ae.Body), `{"type":"error"`) {
		t.Errorf("StatusCode/Body = %d/%q (%v)", ae.StatusCode, ae.Body, err)
	}
}

// A server that keeps the stream open after message_stop must not hold up
// the caller: the drain gives up and closes the connection.
func TestDrainGivesUp(t *testing.T) {
	gone := make(chan struct{})
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		writeEvents(w, textStream()...)
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(30 * time.Second):
		}
	})
	p := api.provider()
	p.drainWait = 50 * time.Millisecond
	done := make(chan error, 1)
	go func() {
		_, err := llm.Collect(p.Stream(t.Context(), simpleRequest()), nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stream did not return after message_stop")
	}
	waitGone(t, gone)
}
