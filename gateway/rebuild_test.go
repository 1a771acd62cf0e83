package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/store"
)

// A memory entry added for a principal between two turns of its session
// rebuilds the session's prompt once: the second turn's stream has one
// status event of kind prompt_rebuilt (typed: memory changed) and the
// transcript row that says it; the third turn has neither.
func TestSSEPromptRebuilt(t *testing.T) {
	h := newHarness(t, harnessOptions{envOpts: testenv.Options{Configure: func(c *agent.Config) { c.Memory.Enabled = true }}})
	sid := h.session(h.token)
	s := h.open(h.token, sid, 0)
	defer s.close()
	turnOf := func(text string) []sseEvent {
		t.Helper()
		return s.until(t, 30*time.Second, finished(h.send(h.token, sid, text)))
	}
	rebuilt := func(evs []sseEvent) (status, rows []sseEvent) {
		for _, ev := range evs {
			if ev.Type == "status" && ev.Data["kind"] == "prompt_rebuilt" {
				status = append(status, ev)
			}
			if m, _ := ev.Data["message"].(map[string]any); ev.Type == "message" && m["kind"] == string(store.RowPromptRebuilt) {
				rows = append(rows, ev)
			}
		}
		return status, rows
	}
	if st, _ := rebuilt(turnOf("first")); len(st) != 0 {
		t.Fatalf("rebuild on an unchanged session: %v", st)
	}
	if err := h.env.Store.AddMemory(context.Background(), &store.MemoryEntry{Workspace: h.env.Workspace, User: "alice",
		Text: "Alice deploys on Fridays.", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	st, rows := rebuilt(turnOf("second"))
	if len(st) != 1 {
		t.Fatalf("%d prompt_rebuilt status events, want 1", len(st))
	}
	u, _ := st[0].Data["prompt_rebuilt"].(map[string]any)
	if st[0].Data["update"] != "prompt_rebuilt" || u["memory"] != true ||
		st[0].Data["line"] != "capabilities changed (memory changed): system prompt rebuilt once" {
		t.Errorf("status event %s", st[0].Raw)
	}
	if len(rows) != 1 || !strings.Contains(rows[0].Raw, `"Capabilities changed (memory changed): system prompt rebuilt once."`) {
		t.Errorf("transcript rows in the stream: %v", rows)
	}
	if st, rows := rebuilt(turnOf("third")); len(st)+len(rows) != 0 {
		t.Fatalf("third turn: %d status events, %d rows; want none", len(st), len(rows))
	}
	if sys := h.env.Srv.Requests(); len(sys) != 3 || !strings.Contains(sys[1].System, "Alice deploys on Fridays.") || sys[1].System != sys[2].System {
		t.Fatal("the rebuilt prompt was not sent, or changed again")
	}
}
