package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"github.com/talaria-agent/talaria/store"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/tool"
)

// harness is a real gateway over real HTTP on a real SQLite store, with the
// scripted model server behind it.
type harness struct {
	t     *testing.T
	env   *testenv.Env
	g     *Gateway
	srv   *httptest.Server
	token string // principal "alice"
	other string // principal "bob"
	admin string // principal "ops", scope admin (reads /metrics)
	gate  *gateTool

	smallWrites bool
}

type harnessOptions struct {
	configure func(*Config)
	// smallWrites gives accepted connections a small socket send buffer,
	// so a client that stops reading stalls its stream quickly.
	smallWrites bool
	envOpts     testenv.Options
}

// gateTool is a read-only tool that blocks until released (or its context
// ends), so tests can hold a turn in its tool round.
type gateTool struct {
	mu      sync.Mutex
	release chan struct{}
	entered chan struct{}
}

func newGateTool() *gateTool {
	return &gateTool{release: make(chan struct{}), entered: make(chan struct{}, 16)}
}

func (g *gateTool) Info() tool.Info {
	return tool.Info{Name: "wait_gate", Description: "waits", ReadOnly: true, Parameters: testenv.ObjectSchema(`{}`), Repeatable: true}
}

func (g *gateTool) Run(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	g.entered <- struct{}{}
	g.mu.Lock()
	ch := g.release
	g.mu.Unlock()
	select {
	case <-ch:
		return tool.Result{Content: "gate opened"}, nil
	case <-ctx.Done():
		return tool.Result{Content: "interrupted", IsError: true}, ctx.Err()
	}
}

func (g *gateTool) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.release:
	default:
		close(g.release)
	}
}

// echoReplies answers every request with the last user text.
func echoReplies(r fakellm.Request) fakellm.Step {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return fakellm.Text("echo: " + r.Messages[i].Text)
		}
	}
	return fakellm.Text("echo")
}

func newHarness(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	gate := newGateTool()
	eo := o.envOpts
	eo.ExtraTools = append(eo.ExtraTools, gate)
	env := testenv.New(t, eo)
	env.Srv.SetDefault(echoReplies)
	h := &harness{t: t, env: env, gate: gate, smallWrites: o.smallWrites}
	h.start(o.configure)
	var err error
	if h.token, _, err = CreateToken(context.Background(), env.Store, "alice-laptop", "alice", ""); err != nil {
		t.Fatal(err)
	}
	if h.other, _, err = CreateToken(context.Background(), env.Store, "bob", "bob", ""); err != nil {
		t.Fatal(err)
	}
	if h.admin, _, err = CreateToken(context.Background(), env.Store, "operator", "ops", store.ScopeAdmin); err != nil {
		t.Fatal(err)
	}
	return h
}

// start builds a gateway on the env's store and serves it.
func (h *harness) start(configure func(*Config)) {
	h.t.Helper()
	ac := h.env.Config
	ac.AdmitWait = 5 * time.Second
	cfg := Config{Store: h.env.Store, NewAgent: Template{Agent: ac}.NewAgent, ApprovalTimeout: 30 * time.Second, Heartbeat: time.Second}
	if configure != nil {
		configure(&cfg)
	}
	g, err := New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := g.Start(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	h.g = g
	h.srv = httptest.NewUnstartedServer(g.Handler())
	if h.smallWrites {
		h.srv.Listener = smallWriteListener{h.srv.Listener}
	}
	h.srv.Start()
	h.t.Cleanup(func() { h.stop(0) })
}

// stop shuts the gateway down (drain d) and closes the server.
func (h *harness) stop(d time.Duration) {
	if h.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.g.Shutdown(ctx, d); err != nil {
		h.t.Errorf("shutdown: %v", err)
	}
	h.gate.open()
	h.srv.Close()
	h.srv = nil
}

// do sends a request and returns the status and decoded JSON body.
func (h *harness) do(method, path, token string, body any) (int, map[string]any) {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, h.srv.URL+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			h.t.Fatalf("%s %s: body is not JSON: %q", method, path, raw)
		}
	}
	return resp.StatusCode, out
}

func (h *harness) session(token string) string {
	h.t.Helper()
	code, out := h.do("POST", "/v1/sessions", token, map[string]any{"title": "t"})
	if code != http.StatusCreated {
		h.t.Fatalf("create session: %d %v", code, out)
	}
	return out["id"].(string)
}

func (h *harness) send(token, sid, text string) string {
	h.t.Helper()
	code, out := h.do("POST", "/v1/sessions/"+sid+"/messages", token, map[string]any{"text": text})
	if code != http.StatusAccepted {
		h.t.Fatalf("post message: %d %v", code, out)
	}
	return out["turn_id"].(string)
}

type smallWriteListener struct{ net.Listener }

func (l smallWriteListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// follow reads a session's events like a browser's EventSource: whenever
// the stream ends it reconnects with the last id it got.
func (h *harness) follow(sid string, after int64, timeout time.Duration, stop func(sseEvent) bool) []sseEvent {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	var got []sseEvent
	for time.Now().Before(deadline) {
		s := h.open(h.token, sid, after)
		for ev := range s.events {
			if ev.ID <= after {
				h.t.Fatalf("event %d again after %d", ev.ID, after)
			}
			after = ev.ID
			got = append(got, ev)
			if stop(ev) {
				s.close()
				return got
			}
		}
		s.close()
	}
	h.t.Fatalf("follow: timed out; got %s", types(got))
	return nil
}

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct {
	ID   int64
	Type string
	Data map[string]any
	Raw  string
}

func (e sseEvent) turn() string { s, _ := e.Data["turn_id"].(string); return s }

// sseStream is an open event stream.
type sseStream struct {
	resp   *http.Response
	cancel context.CancelFunc
	events chan sseEvent
	done   chan struct{}
}

// open starts GET /v1/sessions/{id}/events; lastID > 0 sends Last-Event-ID.
func (h *harness) open(token, sid string, lastID int64) *sseStream {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", h.srv.URL+"/v1/sessions/"+sid+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	if lastID > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(lastID, 10))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		h.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		h.t.Fatalf("events: %d %s", resp.StatusCode, b)
	}
	s := &sseStream{resp: resp, cancel: cancel, events: make(chan sseEvent, 100000), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(s.events)
		readSSE(resp.Body, func(ev sseEvent) { s.events <- ev })
	}()
	h.t.Cleanup(s.close)
	return s
}

func (s *sseStream) close() {
	s.cancel()
	s.resp.Body.Close()
	<-s.done
}

// until collects events until stop returns true (inclusive) or timeout.
func (s *sseStream) until(t *testing.T, timeout time.Duration, stop func(sseEvent) bool) []sseEvent {
	t.Helper()
	var got []sseEvent
	tm := time.NewTimer(timeout)
	defer tm.Stop()
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("stream ended before the expected event; got %s", types(got))
			}
			got = append(got, ev)
			if stop(ev) {
				return got
			}
		case <-tm.C:
			t.Fatalf("timed out waiting for an event; got %s", types(got))
		}
	}
}

func finished(turnID string) func(sseEvent) bool {
	return func(ev sseEvent) bool { return ev.Type == "turn_finished" && ev.turn() == turnID }
}

func readSSE(r io.Reader, fn func(sseEvent)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var ev sseEvent
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Type != "" {
				ev.Raw = data.String()
				_ = json.Unmarshal([]byte(ev.Raw), &ev.Data)
				fn(ev)
			}
			ev, data = sseEvent{}, strings.Builder{}
		case strings.HasPrefix(line, "id: "):
			ev.ID, _ = strconv.ParseInt(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			ev.Type = line[7:]
		case strings.HasPrefix(line, "data: "):
			data.WriteString(line[6:])
		}
	}
}

func types(evs []sseEvent) string {
	var b strings.Builder
	for i, e := range evs {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(e.Type)
	}
	return b.String()
}

func resultOf(t *testing.T, ev sseEvent) map[string]any {
	t.Helper()
	r, ok := ev.Data["result"].(map[string]any)
	if !ok {
		t.Fatalf("turn_finished without a result: %s", ev.Raw)
	}
	return r
}

var _ = agent.NewTurnID
