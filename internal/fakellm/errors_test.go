package fakellm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
)

// sdkError is what a client's API error says, whichever SDK produced it.
type sdkError struct {
	status    int
	header    http.Header
	typ       string
	message   string
	requestID string
}

func asSDKError(t *testing.T, m mode, err error) sdkError {
	t.Helper()
	if m.api == APIOpenAI {
		var e *openai.Error
		if !errors.As(err, &e) {
			t.Fatalf("error %T %v is not an *openai.Error", err, err)
		}
		return sdkError{e.StatusCode, e.Response.Header, e.Type, e.Message, e.Response.Header.Get("x-request-id")}
	}
	var e *anthropic.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not an *anthropic.Error", err, err)
	}
	return sdkError{e.StatusCode, e.Response.Header, string(e.Type()), e.Message, e.RequestID}
}

func TestHTTPErrorReachesClient(t *testing.T) {
	cases := []struct {
		name       string
		step       Step
		wantStatus int
		wantType   string
		wantMsg    string
		wantHeader map[string]string
	}{
		{
			name:       "rate limit with Retry-After",
			step:       HTTPError(429, "rate_limit_error", "Rate limit reached, slow down").WithHeader("Retry-After", "7"),
			wantStatus: 429, wantType: "rate_limit_error", wantMsg: "Rate limit reached, slow down",
			wantHeader: map[string]string{"Retry-After": "7"},
		},
		{
			name:       "overloaded",
			step:       HTTPError(529, "overloaded_error", "Overloaded"),
			wantStatus: 529, wantType: "overloaded_error", wantMsg: "Overloaded",
		},
		{
			name:       "context overflow",
			step:       HTTPError(400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"),
			wantStatus: 400, wantType: "invalid_request_error", wantMsg: "prompt is too long: 250000 tokens > 200000 maximum",
		},
		{
			name:       "stream error on a non-streaming call becomes an HTTP error",
			step:       Step{Text: "partial", StreamError: &ErrorReply{Status: 503, Type: "overloaded_error", Message: "try later"}},
			wantStatus: 503, wantType: "overloaded_error", wantMsg: "try later",
		},
	}
	for _, tc := range cases {
		for _, m := range allModes {
			if tc.step.StreamError != nil && m.stream {
				continue // covered by TestStreamError
			}
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				s := newServer(t)
				s.Script(tc.step)
				_, err := call(testCtx(t), s, m, "model-x")
				if err == nil {
					t.Fatal("call succeeded, want an API error")
				}
				e := asSDKError(t, m, err)
				if e.status != tc.wantStatus || e.typ != tc.wantType || e.message != tc.wantMsg {
					t.Errorf("error = %d %q %q, want %d %q %q", e.status, e.typ, e.message, tc.wantStatus, tc.wantType, tc.wantMsg)
				}
				if !strings.HasPrefix(e.requestID, "req_") {
					t.Errorf("request id = %q, want req_…", e.requestID)
				}
				for k, v := range tc.wantHeader {
					if got := e.header.Get(k); got != v {
						t.Errorf("header %s = %q, want %q", k, got, v)
					}
				}
			})
		}
	}
}

// TestErrorBodyShapes checks the exact JSON a real service sends, which is
// what the failure classifier reads.
func TestErrorBodyShapes(t *testing.T) {
	cases := []struct {
		name, path string
		step       Step
		want       string // JSON, compared structurally; "REQID" is the request id
		wantCT     string
		idHeader   string
	}{
		{
			name: "openai shaped", path: "/v1/chat/completions",
			step:     Step{Error: &ErrorReply{Status: 429, Type: "requests", Message: "Rate limit reached", Code: "rate_limit_exceeded"}},
			want:     `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			wantCT:   "application/json",
			idHeader: "x-request-id",
		},
		{
			name: "anthropic shaped", path: "/v1/messages",
			step:     HTTPError(529, "overloaded_error", "Overloaded"),
			want:     `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"REQID"}`,
			wantCT:   "application/json",
			idHeader: "request-id",
		},
		{
			name: "raw non-JSON body", path: "/v1/messages",
			step:     RawError(502, "<html>Bad Gateway</html>", "Retry-After: 3", "X-Extra: yes", "no colon here"),
			want:     "<html>Bad Gateway</html>",
			wantCT:   "text/plain; charset=utf-8",
			idHeader: "request-id",
		},
		{
			name: "raw JSON body keeps its bytes", path: "/v1/chat/completions",
			step:     RawError(400, `{"error":{"message":"max_tokens is too large","type":"invalid_request_error","param":"max_tokens","code":null}}`),
			want:     `{"error":{"message":"max_tokens is too large","type":"invalid_request_error","param":"max_tokens","code":null}}`,
			wantCT:   "application/json",
			idHeader: "x-request-id",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t)
			s.Script(tc.step)
			body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
			status, h, got := post(t, s, tc.path, body)
			wantStatus := tc.step.Error.Status
			if status != wantStatus {
				t.Errorf("status = %d, want %d", status, wantStatus)
			}
			if ct := h.Get("Content-Type"); ct != tc.wantCT {
				t.Errorf("Content-Type = %q, want %q", ct, tc.wantCT)
			}
			id := h.Get(tc.idHeader)
			if !strings.HasPrefix(id, "req_") {
				t.Errorf("%s = %q, want req_…", tc.idHeader, id)
			}
			want := strings.ReplaceAll(tc.want, "REQID", id)
			if json.Valid([]byte(want)) {
				if !jsonEqual(t, got, []byte(want)) {
					t.Errorf("body = %s, want %s", got, want)
				}
			} else if string(got) != want {
				t.Errorf("body = %q, want %q", got, want)
			}
			for k, v := range tc.step.Error.Header {
				if h.Get(k) != v {
					t.Errorf("header %s = %q, want %q", k, h.Get(k), v)
				}
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("not JSON: %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("not JSON: %s: %v", b, err)
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}

func TestRawErrorHeaders(t *testing.T) {
	st := RawError(503, "busy", "Retry-After: 3", "x-ratelimit-reset: 10s", "broken")
	want := map[string]string{"Retry-After": "3", "x-ratelimit-reset": "10s"}
	if len(st.Error.Header) != len(want) {
		t.Fatalf("headers = %v, want %v", st.Error.Header, want)
	}
	for k, v := range want {
		if st.Error.Header[k] != v {
			t.Errorf("header %s = %q, want %q", k, st.Error.Header[k], v)
		}
	}
}

func TestWithHeaderDoesNotAlias(t *testing.T) {
	base := HTTPError(429, "rate_limit_error", "slow")
	a := base.WithHeader("Retry-After", "1")
	b := base.WithHeader("Retry-After", "2")
	if base.Error.Header != nil || a.Error.Header["Retry-After"] != "1" || b.Error.Header["Retry-After"] != "2" {
		t.Errorf("headers alias: base %v a %v b %v", base.Error.Header, a.Error.Header, b.Error.Header)
	}
	ok := Text("hi").WithHeader("x-ratelimit-remaining", "0")
	if ok.Header["x-ratelimit-remaining"] != "0" {
		t.Errorf("success header not set: %v", ok.Header)
	}
}

func TestSuccessHeader(t *testing.T) {
	s := newServer(t)
	s.Script(Text("hi").WithHeader("x-ratelimit-remaining-requests", "0"))
	status, h, _ := post(t, s, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 || h.Get("x-ratelimit-remaining-requests") != "0" {
		t.Errorf("status %d, header %q; want 200 and \"0\"", status, h.Get("x-ratelimit-remaining-requests"))
	}
}

func TestStreamError(t *testing.T) {
	partial := "This part arrives before the stream fails."
	cases := []struct {
		name string
		m    mode
	}{
		{"openai", mode{APIOpenAI, true}},
		{"anthropic", mode{APIAnthropic, true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t)
			s.Script(Step{Text: partial, StreamError: &ErrorReply{Type: "overloaded_error", Message: "Overloaded"}})
			r, err := call(testCtx(t), s, tc.m, "model-x")
			if err == nil {
				t.Fatal("stream ended cleanly, want the in-stream error")
			}
			if r.text != partial {
				t.Errorf("text before the error = %q, want %q", r.text, partial)
			}
			if tc.m.api == APIAnthropic {
				e := asSDKError(t, tc.m, err)
				if e.typ != "overloaded_error" || e.message != "Overloaded" {
					t.Errorf("stream error = %q %q, want overloaded_error Overloaded", e.typ, e.message)
				}
				return
			}
			if !strings.Contains(err.Error(), "Overloaded") || !strings.Contains(err.Error(), "overloaded_error") {
				t.Errorf("stream error = %v, want it to carry the error event", err)
			}
		})
	}
}

func TestDropBreaksConnection(t *testing.T) {
	partial := "Some text that is streamed before the line goes dead."
	for _, m := range allModes {
		t.Run(m.String(), func(t *testing.T) {
			s := newServer(t)
			s.Script(Drop(partial), Text("after"))
			r, err := call(testCtx(t), s, m, "model-x")
			if err == nil {
				t.Fatal("call succeeded, want a broken connection")
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("error = %v, want an unexpected EOF", err)
			}
			if m.stream && r.text != partial {
				t.Errorf("text before the drop = %q, want %q", r.text, partial)
			}
			// The server itself is fine afterwards.
			r, err = call(testCtx(t), s, m, "model-x")
			if err != nil || r.text != "after" {
				t.Errorf("next call = %q, %v; want \"after\"", r.text, err)
			}
		})
	}
}

// TestDropMidToolCall cuts a stream inside a tool call's arguments block.
func TestDropMidToolCall(t *testing.T) {
	for _, m := range []mode{{APIOpenAI, true}, {APIAnthropic, true}} {
		t.Run(m.String(), func(t *testing.T) {
			s := newServer(t)
			s.Script(Step{Calls: []Call{ToolCall("read_file", `{"path":"x.txt"}`)}, Drop: true})
			_, err := call(testCtx(t), s, m, "model-x")
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("error = %v, want an unexpected EOF", err)
			}
		})
	}
}

func TestLatencyHonoursContext(t *testing.T) {
	cases := []struct {
		name string
		opts []Option
		step Step
	}{
		{"step latency", nil, Text("late").WithLatency(time.Hour)},
		{"server latency", []Option{WithLatency(time.Hour)}, Text("late")},
	}
	for _, tc := range cases {
		for _, m := range allModes {
			t.Run(tc.name+"/"+m.String(), func(t *testing.T) {
				s := newServer(t, tc.opts...)
				s.Script(tc.step)
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				start := time.Now()
				_, err := call(ctx, s, m, "model-x")
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("error = %v, want the deadline", err)
				}
				if d := time.Since(start); d > 10*time.Second {
					t.Errorf("call returned after %v; the latency was not interruptible", d)
				}
				waitIdle(t, s)
			})
		}
	}
}

// waitIdle fails unless every handler has finished within a generous bound.
func waitIdle(t *testing.T, s *Server) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		n := s.active
		s.mu.Unlock()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d handlers still running", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestClientDisconnectEndsHandler: a client that goes away mid-stream ends
// the handler even though the server is not closed.
func TestClientDisconnectEndsHandler(t *testing.T) {
	for _, m := range []mode{{APIOpenAI, true}, {APIAnthropic, true}} {
		t.Run(m.String(), func(t *testing.T) {
			s := newServer(t)
			s.Script(Text("one two three four five six seven eight nine ten").WithChunkDelay(time.Hour))
			ctx, cancel := context.WithCancel(testCtx(t))
			first := make(chan struct{})
			errc := make(chan error, 1)
			go func() {
				errc <- streamFirstEvent(ctx, s, m, first)
			}()
			select {
			case <-first:
			case <-time.After(10 * time.Second):
				t.Fatal("no first event")
			}
			cancel()
			if err := <-errc; err == nil {
				t.Error("stream ended cleanly after cancel")
			}
			waitIdle(t, s)
		})
	}
}

// streamFirstEvent starts a stream, signals first after one event and
// reads on until the stream ends; it returns the stream's error.
func streamFirstEvent(ctx context.Context, s *Server, m mode, first chan<- struct{}) error {
	if m.api == APIOpenAI {
		c := openaiClient(s)
		st := c.Chat.Completions.NewStreaming(ctx, openaiParams("m", openai.UserMessage("hi")))
		defer st.Close()
		for n := 0; st.Next(); n++ {
			if n == 0 {
				close(first)
			}
		}
		return st.Err()
	}
	c := anthropicClient(s)
	st := c.Messages.NewStreaming(ctx, anthropicParams("m", anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))))
	defer st.Close()
	for n := 0; st.Next(); n++ {
		if n == 0 {
			close(first)
		}
	}
	return st.Err()
}

func TestCloseEndsInFlightStreams(t *testing.T) {
	for _, m := range []mode{{APIOpenAI, true}, {APIAnthropic, true}} {
		t.Run(m.String(), func(t *testing.T) {
			s := New()
			s.Script(Text("one two three four five six seven eight nine ten").WithChunkDelay(time.Hour))
			ctx := testCtx(t)
			first := make(chan struct{})
			errc := make(chan error, 1)
			go func() { errc <- streamFirstEvent(ctx, s, m, first) }()
			select {
			case <-first:
			case <-time.After(10 * time.Second):
				t.Fatal("no first event")
			}
			closed := make(chan struct{})
			go func() { s.Close(); close(closed) }()
			select {
			case err := <-errc:
				if err == nil {
					t.Error("stream ended cleanly when the server closed mid-reply")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("client still reading 10s after Close")
			}
			select {
			case <-closed:
			case <-time.After(10 * time.Second):
				t.Fatal("Close did not return")
			}
			s.Close() // idempotent
		})
	}
}

func TestNoScriptLeft(t *testing.T) {
	for _, m := range allModes {
		t.Run(m.String(), func(t *testing.T) {
			s := newServer(t)
			_, err := call(testCtx(t), s, m, "model-x")
			if err == nil {
				t.Fatal("call succeeded without a script")
			}
			e := asSDKError(t, m, err)
			if e.status != 500 || !strings.Contains(e.message, "no scripted reply") {
				t.Errorf("error = %d %q, want 500 saying no scripted reply", e.status, e.message)
			}
		})
	}
}

func TestHangup(t *testing.T) {
	for _, m := range allModes {
		t.Run(m.String(), func(t *testing.T) {
			s := newServer(t)
			s.Script(Text("warm the connection"), Hangup(), Text("after"))
			if _, err := call(testCtx(t), s, m, "model-x"); err != nil {
				t.Fatal(err)
			}
			_, err := call(testCtx(t), s, m, "model-x")
			if err == nil {
				t.Fatal("call succeeded, want a transport error")
			}
			var oe *openai.Error
			var ae *anthropic.Error
			if errors.As(err, &oe) || errors.As(err, &ae) {
				t.Fatalf("error = %v, want a transport error, not an API error", err)
			}
			if !errors.Is(err, io.EOF) {
				t.Errorf("error = %v, want an EOF before any response", err)
			}
			if n := len(s.Requests()); n != 2 {
				t.Errorf("%d requests after the hangup, want 2 (no transparent retry)", n)
			}
			r, err := call(testCtx(t), s, m, "model-x")
			if err != nil || r.text != "after" {
				t.Errorf("next call = %q, %v; want \"after\" (a transport retry would have eaten it)", r.text, err)
			}
		})
	}
}
