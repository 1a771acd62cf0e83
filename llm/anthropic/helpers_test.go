package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

// sse formats one event the way the Messages API writes it.
func sse(event, data string) string {
	return "event: " + event + "\ndata: " + data + "\n\n"
}

// Canned events in the API's real shapes.
func messageStart(inTok, cacheRead, cacheWrite int) string {
	return sse("message_start", `{"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`+itoa(inTok)+`,"cache_creation_input_tokens":`+itoa(cacheWrite)+`,"cache_read_input_tokens":`+itoa(cacheRead)+`,"output_tokens":1}}}`)
}

func textStart(i int) string {
	return sse("content_block_start", `{"type":"content_block_start","index":`+itoa(i)+`,"content_block":{"type":"text","text":""}}`)
}

func textDelta(i int, s string) string {
	return sse("content_block_delta", `{"type":"content_block_delta","index":`+itoa(i)+`,"delta":{"type":"text_delta","text":`+quote(s)+`}}`)
}

func blockStop(i int) string {
	return sse("content_block_stop", `{"type":"content_block_stop","index":`+itoa(i)+`}`)
}

func toolStart(i int, id, name string) string {
	return sse("content_block_start", `{"type":"content_block_start","index":`+itoa(i)+`,"content_block":{"type":"tool_use","id":"`+id+`","name":"`+name+`","input":{}}}`)
}

func jsonDelta(i int, partial string) string {
	return sse("content_block_delta", `{"type":"content_block_delta","index":`+itoa(i)+`,"delta":{"type":"input_json_delta","partial_json":`+quote(partial)+`}}`)
}

func messageDelta(stop string, outTok int) string {
	return sse("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":{"output_tokens":`+itoa(outTok)+`}}`)
}

func messageStop() string { return sse("message_stop", `{"type":"message_stop"}`) }

func ping() string { return sse("ping", `{"type": "ping"}`) }

// textStream is a whole successful answer "Hello, world".
func textStream() []string {
	return []string{
		messageStart(25, 0, 0), textStart(0), ping(),
		textDelta(0, "Hello"), textDelta(0, ", world"), blockStop(0),
		messageDelta("end_turn", 12), messageStop(),
	}
}

// fakeAPI is a scripted Messages endpoint that records what it received.
type fakeAPI struct {
	*httptest.Server
	calls   atomic.Int32
	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
}

func newFakeAPI(t *testing.T, handle http.HandlerFunc) *fakeAPI {
	t.Helper()
	f := &fakeAPI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.bodies = append(f.bodies, body)
		f.headers = append(f.headers, r.Header.Clone())
		f.mu.Unlock()
		if r.URL.Path != "/v1/messages" || r.Method != http.MethodPost {
			http.Error(w, "wrong endpoint "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		handle(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) body(i int) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[i]
}

func (f *fakeAPI) header(i int) http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.headers[i]
}

func (f *fakeAPI) provider() *Provider {
	return New(Config{BaseURL: f.URL, APIKey: "sk-test", HTTPClient: f.Client()})
}

// streamOf answers with the given SSE events, flushing after each.
func streamOf(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeEvents(w, events...)
	}
}

func writeEvents(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("request-id", "req_test")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		_, _ = io.WriteString(w, e)
		w.(http.Flusher).Flush()
	}
}

// jsonError answers with an error status, headers and body.
func jsonError(status int, body string, hdr map[string]string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// run drains a stream, returning the events before the end, the final
// response (nil on error) and the error.
func run(t *testing.T, p *Provider, ctx context.Context, req *llm.Request) ([]llm.Event, *llm.Response, error) {
	t.Helper()
	var events []llm.Event
	var final *llm.Response
	ended := false
	for ev, err := range p.Stream(ctx, req) {
		if ended {
			t.Fatalf("item after the end of the stream: %+v %v", ev, err)
		}
		if err != nil {
			ended = true
			if _, ok := errors.AsType[*llm.APIError](err); !ok {
				t.Fatalf("error is %T, want *llm.APIError: %v", err, err)
			}
			return events, nil, err
		}
		if ev.Type == llm.EventDone {
			ended = true
			final = ev.Response
			continue
		}
		events = append(events, ev)
	}
	if final == nil {
		t.Fatal("stream ended without EventDone or error")
	}
	return events, final, nil
}

func mustAPIError(t *testing.T, err error) *llm.APIError {
	t.Helper()
	if err == nil {
		t.Fatal("want an error, got none")
	}
	ae, ok := errors.AsType[*llm.APIError](err)
	if !ok {
		t.Fatalf("error %T is not *llm.APIError: %v", err, err)
	}
	if ae.Provider != "anthropic" {
		t.Errorf("Provider = %q, want anthropic", ae.Provider)
	}
	return ae
}

func simpleRequest() *llm.Request {
	return &llm.Request{
		Model:    "claude-sonnet-4-5",
		Messages: []llm.Message{llm.NewText(llm.RoleUser, "hi")},
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// quote is s as a JSON string.
func quote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}
