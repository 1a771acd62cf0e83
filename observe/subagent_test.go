package observe_test

import (
	"context"
	"encoding/json"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/telemetrytest"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// A delegate tool that runs a child turn: the child's turn span nests
// under the delegate call's span in the same trace, and the parent turn
// records the subagent's start and stop.
func TestSubagentTurnNestsUnderItsCall(t *testing.T) {
	r := telemetrytest.NewReceiver(t)
	tel := setup(t, r, "metadata")
	var env *testenv.Env
	delegate := testenv.MustFunc(tool.Info{Name: "delegate", Description: "Runs a subagent.", Parameters: testenv.ObjectSchema(`{}`)},
		func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			child, err := env.Agent.NewSession(ctx, agent.SessionOptions{Title: "child"})
			if err != nil {
				return tool.Result{}, err
			}
			turn.SubagentStarted(ctx, child.ID)
			res, err := env.Agent.RunTurn(ctx, child.ID, agent.Input{Text: "sub-task"})
			if err != nil {
				return tool.Result{}, err
			}
			turn.SubagentStopped(ctx, child.ID, res.Exit)
			return tool.Result{Content: res.FinalText}, nil
		})
	env = testenv.New(t, testenv.Options{NoBuiltins: true, ExtraTools: []tool.Tool{delegate},
		Configure: func(c *agent.Config) { c.Observer = tel.Observer }})
	env.Srv.Script(fakellm.Calls(fakellm.ToolCall("delegate", `{}`)), fakellm.Text("child answer"), fakellm.Text("parent done"))
	if res := env.Run("delegate it"); res.Exit != turn.ExitCompleted || res.FinalText != "parent done" {
		t.Fatalf("parent: %s %q", res.Exit, res.FinalText)
	}
	flush(t, tel)
	var turns []*tracepb.Span
	var call *tracepb.Span
	for _, s := range r.Spans() {
		switch s.Name {
		case "turn":
			turns = append(turns, s)
		case "execute_tool delegate":
			call = s
		}
	}
	if len(turns) != 2 || call == nil {
		t.Fatalf("%d turn spans, delegate span %v", len(turns), call != nil)
	}
	child, parent := turns[0], turns[1] // the child ends first
	if string(child.ParentSpanId) != string(call.SpanId) || string(child.TraceId) != string(parent.TraceId) {
		t.Error("the child's turn is not nested under the delegate call")
	}
	var got []string
	for _, e := range parent.Events {
		a := telemetrytest.Attrs(e.Attributes)
		got = append(got, e.Name+":"+a["talaria.subagent.outcome"].(string))
		if a["talaria.subagent.session"] != telemetrytest.Attrs(child.Attributes)["talaria.session.id"] {
			t.Errorf("event %s names session %v", e.Name, a["talaria.subagent.session"])
		}
	}
	if len(got) != 2 || got[0] != "subagent_start:" || got[1] != "subagent_stop:completed" {
		t.Errorf("parent turn events %v", got)
	}
}
