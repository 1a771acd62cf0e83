package gateway

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/store"
)

// TestBusySteer: a message posted with "busy":"steer" while a three-round
// tool turn sits in its first round joins that turn: the 2nd request ends
// with it (every tool result still paired, strict validation), it is stored
// as a steer row between the results and the next answer, a turn_steered
// event names it, and it never runs as a turn of its own. A steer posted
// while the last call runs is the next turn.
func TestBusySteer(t *testing.T) {
	for _, api := range []string{"openai", "anthropic"} {
		t.Run(api, func(t *testing.T) {
			h := newHarness(t, harnessOptions{envOpts: testenv.Options{API: api}})
			sid := h.session(h.token)
			s := h.open(h.token, sid, 0)
			var lateID atomic.Pointer[string] // set on the model server's goroutine
			late := func() string {
				if p := lateID.Load(); p != nil {
					return *p
				}
				return ""
			}
			h.env.Srv.Script(
				fakellm.Calls(fakellm.ToolCall("wait_gate", `{}`)),
				fakellm.Calls(fakellm.ToolCall("wait_gate", `{}`)),
				fakellm.Step{Respond: func(fakellm.Request) fakellm.Step {
					// The turn's last call is running: too late to join.
					code, out := h.do("POST", "/v1/sessions/"+sid+"/messages", h.token, map[string]any{"text": "and one more thing", "busy": "steer"})
					if code != 202 {
						t.Errorf("late steer = %d %v", code, out)
					} else {
						id := out["turn_id"].(string)
						lateID.Store(&id)
					}
					return fakellm.Text("done with both")
				}},
			)
			t1 := h.send(h.token, sid, "first")
			<-h.gate.entered // turn 1 is inside its first tool round
			code, out := h.do("POST", "/v1/sessions/"+sid+"/messages", h.token, map[string]any{"text": "also look at the logs", "busy": "steer"})
			if code != 202 || out["steering"] != t1 {
				t.Fatalf("steer = %d %v", code, out)
			}
			steerID := out["turn_id"].(string)
			h.gate.open()
			evs := s.until(t, 20*time.Second, func(e sseEvent) bool { return late() != "" && e.Type == "turn_finished" && e.turn() == late() })
			var steered, finishedTurns []string
			for _, e := range evs {
				switch e.Type {
				case "turn_steered":
					steered = append(steered, e.turn()+"<-"+e.Data["steered_turn_id"].(string))
				case "turn_finished":
					finishedTurns = append(finishedTurns, e.turn())
				}
			}
			if strings.Join(steered, " ") != t1+"<-"+steerID {
				t.Fatalf("turn_steered events %v, want %s<-%s", steered, t1, steerID)
			}
			if strings.Join(finishedTurns, " ") != t1+" "+late() {
				t.Fatalf("finished turns %v, want %s then the late one %s (the steer never runs alone)", finishedTurns, t1, late())
			}
			h.env.NoViolations()
			reqs := h.env.Srv.Requests()
			if len(reqs) != 4 {
				t.Fatalf("%d requests, want 4", len(reqs))
			}
			if m := reqs[1].Messages[len(reqs[1].Messages)-1]; m.Role != "user" || !strings.Contains(m.Text, "also look at the logs") {
				t.Fatalf("2nd request ends with %+v", m)
			}
			if strings.Contains(string(reqs[0].Body), "also look at the logs") {
				t.Fatal("the steer is in the first request")
			}
			var seq []string
			for _, r := range h.env.RowsOf(sid, false) {
				k := string(r.Role)
				if r.Kind == store.RowSteer {
					k = "steer"
				}
				seq = append(seq, k)
			}
			want := "user assistant tool steer assistant tool assistant user assistant"
			if strings.Join(seq, " ") != want {
				t.Fatalf("rows %v, want %s", seq, want)
			}
		})
	}
}
