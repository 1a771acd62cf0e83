package gateway

import (
	"fmt"

	"github.com/talaria-agent/talaria/store"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// TestMemoryBounded: a gateway that saw 2,000 model names and 10,000
// sessions keeps at most MaxAgents agents and MaxIdleSessions idle session
// states, and its heap after GC returns near where it started (without the
// bounds the agents alone were +37 MB).
func TestMemoryBounded(t *testing.T) {
	h := newHarness(t, harnessOptions{configure: func(c *Config) { c.MaxIdleSessions = 1000 }})
	g := h.g
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	for i := range 2000 {
		if _, err := g.agentFor("", "", "", fmt.Sprintf("model-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10000 {
		g.state(fmt.Sprintf("ses_%d", i))
	}
	g.mu.Lock()
	agents, sessions := len(g.agents), len(g.sessions)
	g.mu.Unlock()
	if agents > g.cfg.MaxAgents || sessions > g.cfg.MaxIdleSessions {
		t.Fatalf("%d agents (max %d), %d session states (max %d)", agents, g.cfg.MaxAgents, sessions, g.cfg.MaxIdleSessions)
	}
	if grew := int64(heap()) - int64(before); grew > 8<<20 {
		t.Fatalf("heap grew by %d MB after GC", grew>>20)
	}
}

// TestToolLabelsBounded: tool names the model makes up are counted under
// gen_ai_tool_name="other" on /metrics, so they cannot grow its labels.
func TestToolLabelsBounded(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.env.Srv.Script(
		fakellm.Calls(fakellm.ToolCall("made_up_tool_1", `{}`), fakellm.ToolCall("made_up_tool_2", `{}`)),
		fakellm.Text("done"),
	)
	sid := h.session(h.token)
	s := h.open(h.token, sid, 0)
	s.until(t, 10*time.Second, finished(h.send(h.token, sid, "go")))
	m := h.metrics(t)
	if strings.Contains(m, "made_up_tool") || !strings.Contains(m, `gen_ai_tool_name="other"`) {
		t.Fatalf("made-up tool names on /metrics:\n%s", grepLines(m, "tool"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestHubsBounded: hubs opened without the session's state (a stream of
// an idle session, rows written through the observed store) are evicted
// too once there are more than MaxIdleSessions, except those with a
// subscriber.
func TestHubsBounded(t *testing.T) {
	h := newHarness(t, harnessOptions{configure: func(c *Config) { c.MaxIdleSessions = 50 }})
	g := h.g
	ctx := t.Context()
	var ids []string
	for range 400 {
		s := &store.Session{Principal: "alice", Provider: "p", Model: "m"}
		if err := h.env.Store.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	held, err := g.hubs.get(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := held.subscribe(0, 8)
	defer held.unsubscribe(sub)
	for _, id := range ids[1:] {
		if _, err := g.hubs.get(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(g.hubs.all()); n > g.cfg.MaxIdleSessions {
		t.Fatalf("%d hubs kept, max %d", n, g.cfg.MaxIdleSessions)
	}
	if g.hubs.lookup(ids[0]) != held {
		t.Fatalf("the hub with a subscriber was evicted")
	}
}
