package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// cutOff stores a turn whose process died right after admitting it: its
// user row, and a lease that was never released (expired here).
func cutOff(t *testing.T, env *testenv.Env, turnID string) {
	t.Helper()
	row := &store.Message{Message: llm.NewText(llm.RoleUser, "do it"), TurnID: turnID, CreatedAt: time.Now()}
	l, err := env.Store.AcquireLeaseAppend(t.Context(), env.Session.ID, "dead-host:1:x", time.Minute, row)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Store.ReleaseLease(t.Context(), l); err != nil {
		t.Fatal(err)
	}
}

// ResumeCutOff decides a session's last turn: one that ended, was never
// admitted, or still runs is left alone; a cut-off one is continued to its
// answer (a handoff recorded first), or marked — handoff: interrupt, or
// its handoffs used up (handoff_limit) — with a row the next turn's
// request carries validly.
func TestResumeCutOff(t *testing.T) {
	cases := []struct {
		name    string
		prepare func(t *testing.T, env *testenv.Env)
		opt     agent.CutOff
		want    string // outcome; "" = nothing to decide
		exit    turn.Exit
	}{
		{name: "ended", prepare: func(t *testing.T, env *testenv.Env) {
			env.Srv.Script(fakellm.Text("done"))
			env.Run("hi")
		}},
		{name: "failed", prepare: func(t *testing.T, env *testenv.Env) {
			env.Srv.Script(fakellm.HTTPError(400, "invalid_request_error", "no"))
			env.Run("hi")
		}},
		{name: "unsent", prepare: func(t *testing.T, env *testenv.Env) {
			env.Srv.Script(fakellm.Text("done"))
			env.Run("hi")
			_, release := holdLease(t, env, "other-host:1:x")
			defer release()
			if res := env.RunWith(context.Background(), agent.Input{Text: "busy"}); res.Exit != turn.ExitBusy {
				t.Fatalf("exit %s; want busy", res.Exit)
			}
		}},
		{name: "running", prepare: func(t *testing.T, env *testenv.Env) {
			cutOff(t, env, "t000000aaaaaa")
			holdLease(t, env, "other-host:1:x") // a live holder: the turn runs
		}},
		{name: "continued", prepare: func(t *testing.T, env *testenv.Env) {
			cutOff(t, env, "t000000aaaaaa")
			env.Srv.Script(fakellm.Text("the answer"))
		}, want: agent.CutOffContinued, exit: turn.ExitCompleted},
		{name: "interrupt", prepare: func(t *testing.T, env *testenv.Env) {
			cutOff(t, env, "t000000aaaaaa")
		}, opt: agent.CutOff{Interrupt: true}, want: agent.CutOffInterrupted, exit: turn.ExitInterrupted},
		{name: "limit", prepare: func(t *testing.T, env *testenv.Env) {
			cutOff(t, env, "t000000aaaaaa")
			for i := 1; i <= 2; i++ {
				if err := env.Store.AppendTurnEvents(t.Context(), store.TurnEvent{SessionID: env.Session.ID, TurnID: "t000000aaaaaa",
					Seq: agent.HandoffSeq + i, Kind: "handoff", Start: time.Now(), Detail: "{}"}); err != nil {
					t.Fatal(err)
				}
			}
		}, opt: agent.CutOff{Max: 2}, want: agent.CutOffLimit, exit: turn.ExitHandoffLimit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{})
			tc.prepare(t, env)
			before := len(env.Srv.Requests())
			co, err := env.Agent.ResumeCutOff(t.Context(), env.Session.ID, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if co != nil {
					t.Fatalf("decided %+v; want nothing", co)
				}
				return
			}
			if co == nil || co.Outcome != tc.want || co.TurnID != "t000000aaaaaa" || co.Result.Exit != tc.exit {
				t.Fatalf("got %+v; want outcome %s, exit %s", co, tc.want, tc.exit)
			}
			evs, _ := env.Store.TurnEvents(t.Context(), env.Session.ID, co.TurnID)
			handoffs := 0
			for _, e := range evs {
				if e.Kind == "handoff" {
					handoffs++
				}
			}
			if tc.want == agent.CutOffContinued {
				if co.Result.FinalText != "the answer" || co.Handoff == nil || co.Handoff.Count != 1 || handoffs != 1 {
					t.Fatalf("continued: %q, handoff %+v, %d recorded", co.Result.FinalText, co.Handoff, handoffs)
				}
				var rec agent.HandoffRecord
				for _, e := range evs {
					if e.Kind == "handoff" {
						_ = json.Unmarshal([]byte(e.Detail), &rec)
					}
				}
				if rec.Fence <= 0 || rec.From != "a stopped process" {
					t.Errorf("recorded handoff %+v; want the fence and where it came from", rec)
				}
			} else if len(env.Srv.Requests()) != before {
				t.Fatalf("a marked turn sent %d requests", len(env.Srv.Requests())-before)
			}
			// Decided: asked again, there is nothing to do; the session
			// takes its next turn with a valid request.
			if again, err := env.Agent.ResumeCutOff(t.Context(), env.Session.ID, tc.opt); err != nil || again != nil {
				t.Fatalf("asked again: %+v, %v", again, err)
			}
			env.Srv.Script(fakellm.Text("next"))
			if res := env.Run("next one"); res.FinalText != "next" {
				t.Fatalf("the next turn: %s %q", res.Exit, res.FinalText)
			}
			env.NoViolations()
		})
	}
}

// noTurnEvents hides every optional capability of a store.
type noTurnEvents struct{ store.SessionService }

// TestResumeCutOffWithoutTurnEvents: a store that keeps no turn events
// cannot count a turn's handoffs, so its cut-off turn is marked
// interrupted (saying why) instead of continued without a bound.
func TestResumeCutOffWithoutTurnEvents(t *testing.T) {
	env := testenv.New(t, testenv.Options{Configure: func(cfg *agent.Config) {
		cfg.Store = noTurnEvents{cfg.Store}
	}})
	cutOff(t, env, "t000000aaaaaa")
	before := len(env.Srv.Requests())
	co, err := env.Agent.ResumeCutOff(t.Context(), env.Session.ID, agent.CutOff{})
	if err != nil {
		t.Fatal(err)
	}
	if co == nil || co.Outcome != agent.CutOffInterrupted || co.Result.Exit != turn.ExitInterrupted ||
		!strings.Contains(co.Result.Explanation, "no turn events") {
		t.Fatalf("got %+v; want the turn interrupted because its handoffs cannot be counted", co)
	}
	if n := len(env.Srv.Requests()) - before; n != 0 {
		t.Fatalf("the interrupted turn sent %d requests", n)
	}
}
