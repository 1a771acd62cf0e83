package gateway

import (
	"fmt"
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
