package openai

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
)

// recorded is one request as the fake server saw it.
type recorded struct {
	path   string
	header http.Header
	body   []byte
}

// fakeServer is an httptest server that records every request and answers
// with a test-supplied handler.
type fakeServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

func newFakeServer(t *testing.T, h http.HandlerFunc) *fakeServer {
	t.Helper()
	fs := &fakeServer{}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fs.mu.Lock()
		fs.reqs = append(fs.reqs, recorded{path: r.URL.Path, header: r.Header.Clone(), body: body})
		fs.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(fs.Close)
	return fs
}

func (fs *fakeServer) requests() []recorded {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]recorded(nil), fs.reqs...)
}

func (fs *fakeServer) provider(cfg Config) *Chat {
	if cfg.BaseURL == "" {
		cfg.BaseURL = fs.URL + "/v1"
	}
	return NewChat(cfg)
}

// sse answers with the given data payloads as an event stream, flushing
// after each so the client sees them as separate reads.
func sse(payloads ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Request-Id", "req-123")
		for _, p := range payloads {
			writeEvent(w, p)
		}
	}
}

func writeEvent(w http.ResponseWriter, payload string) {
	fmt.Fprintf(w, "data: %s\n\n", payload)
	w.(http.Flusher).Flush()
}

const done = "[DONE]"

// chunk is a chat.completion.chunk in the shape OpenAI sends; delta is the
// raw JSON of the delta and finish the finish_reason (empty: null).
func chunk(delta, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-abc","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_1","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + fr + `}]}`
}

func textChunk(s string) string { return chunk(`{"content":"`+s+`"}`, "") }

// usageChunk is the trailing chunk include_usage adds: no choices.
func usageChunk(usage string) string {
	return `{"id":"chatcmpl-abc","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":` + usage + `}`
}

// collect drains seq and checks the closing rule: at most one terminal item
// (EventDone or an error), and nothing after it.
func collect(t *testing.T, seq iter.Seq2[llm.Event, error]) ([]llm.Event, *llm.Response, error) {
	t.Helper()
	var (
		evs      []llm.Event
		resp     *llm.Response
		err      error
		terminal int
	)
	for ev, e := range seq {
		if terminal > 0 {
			t.Fatalf("item after the terminal one: %+v, %v", ev, e)
		}
		if e != nil {
			err = e
			terminal++
			continue
		}
		evs = append(evs, ev)
		if ev.Type == llm.EventDone {
			resp = ev.Response
			terminal++
		}
	}
	if terminal != 1 {
		t.Fatalf("sequence ended without a terminal item (events %+v)", evs)
	}
	return evs, resp, err
}

// run streams req (a minimal one when nil) against handler.
func run(t *testing.T, h http.HandlerFunc) ([]llm.Event, *llm.Response, error) {
	t.Helper()
	fs := newFakeServer(t, h)
	p := fs.provider(Config{APIKey: "sk-test"})
	return collect(t, p.Stream(context.Background(), simpleRequest()))
}

func simpleRequest() *llm.Request {
	return &llm.Request{Model: "gpt-4o-mini", Messages: []llm.Message{llm.NewText(llm.RoleUser, "hi")}}
}

// asAPIError asserts err is an *llm.APIError.
func asAPIError(t *testing.T, err error) *llm.APIError {
	t.Helper()
	if err == nil {
		t.Fatal("expected an error, got none")
	}
	ae, ok := err.(*llm.APIError)
	if !ok {
		t.Fatalf("error is %T, want *llm.APIError: %v", err, err)
	}
	return ae
}

// within fails the test when f does not return in d: an upper bound for
// cancellation paths, never a timing assertion.
func within(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	ch := make(chan struct{})
	go func() { defer close(ch); f() }()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("did not return within %v", d)
	}
}

func textOf(evs []llm.Event, typ llm.EventType) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Type == typ {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}
