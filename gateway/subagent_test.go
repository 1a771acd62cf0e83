package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
)

// TestSubagentEvents: a turn over the API that delegates a task shows the
// child on the session's event stream as subagent_started and
// subagent_finished, between the delegate call's tool events, naming the
// child session and its outcome.
func TestSubagentEvents(t *testing.T) {
	h := newHarness(t, harnessOptions{envOpts: testenv.Options{
		Configure: func(c *agent.Config) { c.Subagents.Enabled = true },
	}})
	h.env.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
		if strings.Contains(r.System, "You are a subagent") {
			return fakellm.Text("child says hello")
		}
		if r.Messages[len(r.Messages)-1].Role == "user" {
			return fakellm.Calls(fakellm.ToolCall(agent.DelegateToolName, `{"task":"say hello"}`))
		}
		return fakellm.Text("the child said hello")
	})
	sid := h.session(h.token)
	s := h.open(h.token, sid, 0)
	tid := h.send(h.token, sid, "delegate a greeting")
	evs := s.until(t, 20*time.Second, finished(tid))
	got := types(evs)
	if !strings.Contains(got, "tool_started subagent_started subagent_finished") {
		t.Fatalf("events = %s", got)
	}
	var child string
	for _, e := range evs {
		switch e.Type {
		case "subagent_started":
			sub, _ := e.Data["subagent"].(map[string]any)
			child, _ = sub["session_id"].(string)
			if sub["parent_session_id"] != sid || sub["kind"] != "subagent" || child == "" {
				t.Fatalf("subagent_started = %s", e.Raw)
			}
		case "subagent_finished":
			sub, _ := e.Data["subagent"].(map[string]any)
			if sub["session_id"] != child || sub["exit"] != "completed" {
				t.Fatalf("subagent_finished = %s (started child %q)", e.Raw, child)
			}
		}
	}
	if res := resultOf(t, evs[len(evs)-1]); res["exit"] != "completed" {
		t.Fatalf("result = %v", res)
	}
}
