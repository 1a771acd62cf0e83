//go:build unix

package hostile

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
)

// lastUser is the request's last user text.
func lastUser(r fakellm.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text
		}
	}
	return ""
}

// finished posts text as a streamed turn and returns its turn_finished
// result.
func (s *server) finished(token, sid, text string) map[string]any {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	body, _ := json.Marshal(map[string]string{"text": text})
	req, err := http.NewRequestWithContext(ctx, "POST", s.URL+"v1/sessions/"+sid+"/messages", strings.NewReader(string(body)))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("post message: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		s.t.Fatalf("post message: %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if e, ok := strings.CutPrefix(line, "event: "); ok {
			event = e
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok && event == "turn_finished" {
			var v struct {
				Result map[string]any `json:"result"`
			}
			if err := json.Unmarshal([]byte(d), &v); err != nil {
				s.t.Fatalf("turn_finished: %v", err)
			}
			return v.Result
		}
	}
	s.t.Fatalf("the stream ended without turn_finished")
	return nil
}

// One principal at its turn limit (with more queued) never delays
// another's turn: bob's one-line turn runs while alice's third waits for
// one of her own slots, though the server has a slot free for it.
func TestTurnLimitDoesNotDelayOthers(t *testing.T) {
	release := make(chan struct{})
	var blocked atomic.Int64
	model := func(r fakellm.Request) fakellm.Step {
		if strings.HasPrefix(lastUser(r), "block") {
			blocked.Add(1)
			<-release
		}
		return fakellm.Text("ok")
	}
	s := startServe(t, options{Principals: []string{"alice", "bob"}, Model: model,
		Config: "serve:\n  max_concurrent_turns: 3\n  limits:\n    default:\n      turns: 2\n"})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open)
	alice, bob := s.Tokens["alice"], s.Tokens["bob"]
	for i := range 3 {
		sid := s.newSession(alice)
		if code, b := s.do("POST", "v1/sessions/"+sid+"/messages", alice, `{"text":"block `+string(rune('a'+i))+`"}`); code != 202 {
			t.Fatalf("alice posts: %d %s", code, b)
		}
	}
	if !testenv.Eventually(30*time.Second, func() bool { return blocked.Load() >= 2 }) {
		t.Fatalf("alice's turns did not start")
	}
	bobSID := s.newSession(bob)
	done := make(chan map[string]any, 1)
	go func() { done <- s.finished(bob, bobSID, "hi") }()
	for {
		select {
		case res := <-done:
			if res["exit"] != "completed" {
				t.Fatalf("bob's turn: %v", res)
			}
			if n := blocked.Load(); n != 2 {
				t.Fatalf("alice had %d turns running, over her limit of 2", n)
			}
			open()
			// Alice's third turn runs once one of hers ends.
			if !testenv.Eventually(30*time.Second, func() bool { return blocked.Load() == 3 }) {
				t.Fatalf("alice's queued turn never ran")
			}
			return
		case <-time.After(20 * time.Millisecond):
			if blocked.Load() > 2 {
				open()
				t.Fatalf("alice's third turn took a slot before bob's turn ran (%d running)", blocked.Load())
			}
		}
	}
}

// The daily spending limit stops a turn before the call that would pass
// it: the first call spends $49.50 of $50, the next one's input alone
// would pass the limit, so it is never made, and the turn ends with its
// own exit reason.
func TestSpendLimitStopsBeforeTheCall(t *testing.T) {
	model := func(r fakellm.Request) fakellm.Step {
		if r.Messages[len(r.Messages)-1].Role == "user" {
			st := fakellm.Calls(fakellm.ToolCall("no_such_tool", `{}`))
			st.Usage = &fakellm.Usage{Input: 49500, Output: 1}
			return st
		}
		return fakellm.Text("should not be asked")
	}
	s := startServe(t, options{Principals: []string{"alice"}, Model: model,
		Config: "models:\n  m:\n    input_per_mtok: 1000\n    output_per_mtok: 0\n" +
			"serve:\n  limits:\n    default:\n      spend_usd_per_day: 50\n"})
	tok := s.Tokens["alice"]
	res := s.finished(tok, s.newSession(tok), "spend")
	if n := len(s.Model.Requests()); n != 1 {
		t.Fatalf("the model got %d calls, want 1 (the second would pass the limit)", n)
	}
	failure, _ := res["failure"].(map[string]any)
	if res["exit"] != "spend_limit" || failure["failure_reason"] != "spend_limit" {
		t.Fatalf("turn ended %v, failure %v; want exit spend_limit", res["exit"], failure)
	}
	if exp, _ := res["explanation"].(string); !strings.Contains(exp, "spending limit") {
		t.Fatalf("explanation %q does not say why", exp)
	}
	// The next turn of the day does not call the model either.
	s.finished(tok, s.newSession(tok), "again")
	if n := len(s.Model.Requests()); n != 1 {
		t.Fatalf("after the limit the model got %d calls", n)
	}
}

// The daily spend is kept in the database: a restart of serve does not
// give a principal a fresh allowance. The first server's turn spends the
// whole $50 of the day; after a restart on the same database the next turn
// is refused before any model call.
func TestSpendLimitSurvivesRestart(t *testing.T) {
	const cfg = "models:\n  m:\n    input_per_mtok: 1000\n    output_per_mtok: 0\n" +
		"serve:\n  limits:\n    default:\n      spend_usd_per_day: 50\n"
	spendAll := func(fakellm.Request) fakellm.Step {
		st := fakellm.Text("spent")
		st.Usage = &fakellm.Usage{Input: 50000, Output: 1}
		return st
	}
	first := startServe(t, options{Principals: []string{"alice"}, Model: spendAll, Config: cfg})
	tok := first.Tokens["alice"]
	if res := first.finished(tok, first.newSession(tok), "spend it all"); res["exit"] != "completed" {
		t.Fatalf("first turn ended %v, want completed", res["exit"])
	}
	first.stop()

	second := startServe(t, options{Home: first.Home, Model: spendAll, Config: cfg})
	second.Tokens = first.Tokens
	res := second.finished(tok, second.newSession(tok), "more")
	if n := len(second.Model.Requests()); n != 0 {
		t.Fatalf("after a restart the model got %d calls; the day's $50 were already spent", n)
	}
	if res["exit"] != "spend_limit" {
		t.Fatalf("turn after restart ended %v, want spend_limit", res["exit"])
	}
}

// A model outside the principal's allow-list (default: the configured
// routes) is a 400 before anything is called.
func TestUnknownModelRefused(t *testing.T) {
	s := startServe(t, options{Principals: []string{"alice"}})
	tok := s.Tokens["alice"]
	for _, body := range []string{`{"model":"o1-pro"}`, `{"provider":"anthropic","model":"claude-opus-4"}`} {
		code, b := s.do("POST", "v1/sessions", tok, body)
		if code != 400 || !strings.Contains(string(b), "model_not_allowed") && !strings.Contains(string(b), "not_supported") {
			t.Errorf("create %s: %d %s, want 400", body, code, b)
		}
	}
	if n := len(s.Model.Requests()); n != 0 {
		t.Fatalf("the provider was called %d times", n)
	}
	// The configured model is allowed.
	if code, b := s.do("POST", "v1/sessions", tok, `{"model":"m"}`); code != 201 {
		t.Fatalf("create with the configured model: %d %s", code, b)
	}
}

// A flood of idle sockets from one address is capped (the extra ones are
// closed at once) and /healthz keeps answering another client.
func TestIdleConnectionFlood(t *testing.T) {
	const perAddr, flood = 100, 3000
	s := startServe(t, options{Config: "serve:\n  max_connections_per_address: 100\n  read_header_timeout: 5m\n"})
	addr := strings.TrimSuffix(strings.TrimPrefix(s.URL, "http://"), "/")
	conns := make([]net.Conn, 0, flood)
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	for range flood {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", len(conns), err)
		}
		conns = append(conns, c)
	}
	// Another client (another loopback address) still gets an answer.
	other := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext}}
	resp, err := other.Get(s.URL + "healthz")
	if err != nil {
		t.Fatalf("/healthz during the flood: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/healthz during the flood: %d", resp.StatusCode)
	}
	// The server closed every socket over the cap: a read ends with EOF
	// instead of waiting (the header timeout is 5 minutes). Accepting is
	// first come first served, so by the time /healthz answered every
	// flood socket was accepted or closed.
	open, errs := 0, map[string]int{}
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				open++
			} else {
				errs[err.Error()]++
			}
		}
	}
	if open > perAddr {
		t.Fatalf("%d idle sockets from one address stayed open, cap %d (others: %v)\n%s", open, perAddr, errs, s.Stderr())
	}
}

// An unauthenticated POST with a slow body gets its 401 at once: the body
// is never read, and the connection is closed instead of drained.
func TestSlowUnauthenticatedBody(t *testing.T) {
	s := startServe(t, options{})
	addr := strings.TrimSuffix(strings.TrimPrefix(s.URL, "http://"), "/")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// 100 kB announced, 10 bytes sent; the rest never comes.
	if _, err := c.Write([]byte("POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"title\":")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer while the body is outstanding: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || !resp.Close {
		t.Fatalf("status %d, close %v; want 401 with Connection: close", resp.StatusCode, resp.Close)
	}
}

// The page cannot be framed and leaks no referrer.
func TestPageSecurityHeaders(t *testing.T) {
	s := startServe(t, options{})
	resp, err := http.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := resp.Header
	if h.Get("X-Frame-Options") != "DENY" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") ||
		h.Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("headers: X-Frame-Options %q, CSP %q, Referrer-Policy %q", h.Get("X-Frame-Options"),
			h.Get("Content-Security-Policy"), h.Get("Referrer-Policy"))
	}
}
