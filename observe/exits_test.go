package observe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/telemetrytest"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/observe"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// Every way out of a turn ends every span it opened: the exporter only
// ever receives ended spans, so the attempt in flight must arrive, closed
// with the reason, beside the turn span.
func TestSpansClosedOnEveryExit(t *testing.T) {
	slow := fakellm.Text("too late").WithLatency(30 * time.Second)
	cases := []struct {
		name      string
		exit      turn.Exit
		errorType string
		event     string
		run       func(t *testing.T, env *testenv.Env, fs *testenv.FaultStore) turn.Result
	}{
		{"interrupt", turn.ExitInterrupted, "interrupted", "", func(t *testing.T, env *testenv.Env, _ *testenv.FaultStore) turn.Result {
			env.Srv.Script(slow)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan turn.Result, 1)
			go func() { done <- env.RunWith(ctx, agent.Input{Text: "wait"}) }()
			if !env.Srv.Wait(1, 10*time.Second) {
				t.Fatal("the call never reached the server")
			}
			cancel()
			return <-done
		}},
		{"panic", turn.ExitPanic, "panic", "", func(t *testing.T, env *testenv.Env, _ *testenv.FaultStore) turn.Result {
			env.Srv.Script(fakellm.Text("streamed text"))
			return env.RunWith(context.Background(), agent.Input{Text: "boom", Hooks: turn.Hooks{TextDelta: func(string) { panic("hook exploded") }}})
		}},
		{"lease loss", turn.ExitLeaseLost, "lease_lost", "lease_lost", func(t *testing.T, env *testenv.Env, fs *testenv.FaultStore) turn.Result {
			env.Srv.Script(slow)
			done := make(chan turn.Result, 1)
			go func() { done <- env.RunWith(context.Background(), agent.Input{Text: "wait"}) }()
			// Lose the lease only once the call is in flight: on a loaded
			// machine it could otherwise go before the request is sent.
			if !env.Srv.Wait(1, 10*time.Second) {
				t.Fatal("the call never reached the server")
			}
			fs.FailRefreshes(testenv.StoreError(store.KindLocked))
			defer fs.FailRefreshes(nil)
			return <-done
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := telemetrytest.NewReceiver(t)
			tel := setup(t, r, "full")
			var fs *testenv.FaultStore
			env := testenv.New(t, testenv.Options{NoBuiltins: true, Configure: func(cfg *agent.Config) {
				fs = testenv.NewFaultStore(cfg.Store)
				cfg.Store = fs
				cfg.LeaseTTL = 300 * time.Millisecond
				cfg.LeaseRefresh = 50 * time.Millisecond
				// The recorded event log is written at the end too, whatever
				// ended the turn (after an interrupt, with the turn's context
				// already cancelled).
				cfg.Observer = turn.MultiObserver(tel.Observer, &observe.Recorder{Store: fs})
			}})
			res := c.run(t, env, fs)
			if res.Exit != c.exit {
				t.Fatalf("exit %s (%s), want %s", res.Exit, res.Explanation, c.exit)
			}
			flush(t, tel)
			var root, chat *tracepb.Span
			for _, s := range r.Spans() {
				switch {
				case s.Name == "turn":
					root = s
				case strings.HasPrefix(s.Name, "chat "):
					chat = s
				}
			}
			if root == nil || chat == nil {
				t.Fatalf("spans received: turn %v, chat %v; every opened span must be ended", root != nil, chat != nil)
			}
			if string(chat.ParentSpanId) != string(root.SpanId) {
				t.Error("the attempt is not a child of the turn")
			}
			if a := telemetrytest.Attrs(chat.Attributes); a["error.type"] != c.errorType || chat.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
				t.Errorf("attempt closed with error.type %v status %v, want %s", a["error.type"], chat.Status, c.errorType)
			}
			ra := telemetrytest.Attrs(root.Attributes)
			if ra["talaria.exit"] != string(c.exit) || root.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
				t.Errorf("turn span exit %v status %v", ra["talaria.exit"], root.Status)
			}
			evs, err := env.Store.TurnEvents(context.Background(), env.Session.ID, res.TurnID)
			if err != nil || len(evs) == 0 || evs[0].Kind != "turn" || !strings.Contains(evs[0].Detail, `"exit":"`+string(c.exit)+`"`) {
				t.Errorf("recorded events %+v (err %v): want the turn recorded with exit %s", evs, err, c.exit)
			}
			if c.event != "" {
				found := false
				for _, e := range root.Events {
					found = found || e.Name == c.event
				}
				if !found {
					t.Errorf("turn span has no %s event", c.event)
				}
			}
		})
	}
}

// Tool spans end too: a turn interrupted while a tool runs, and a turn
// that only ever calls tools until its iteration budget is spent, deliver
// one ended execute_tool span per tool run and one ended chat span per
// request the model server saw.
func TestToolSpansClosed(t *testing.T) {
	entered := make(chan struct{}, 8)
	block := testenv.MustFunc(tool.Info{Name: "block", Description: "Waits for its context.", Parameters: testenv.ObjectSchema(`{}`), ReadOnly: true, Repeatable: true},
		func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			entered <- struct{}{}
			<-ctx.Done()
			return tool.Result{Content: "interrupted", IsError: true}, ctx.Err()
		})
	cases := []struct {
		name  string
		exit  turn.Exit
		tools int
		run   func(t *testing.T, env *testenv.Env) turn.Result
	}{
		{"interrupt in a tool", turn.ExitInterrupted, 1, func(t *testing.T, env *testenv.Env) turn.Result {
			env.Srv.Script(fakellm.Calls(fakellm.ToolCall("block", `{}`)))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan turn.Result, 1)
			go func() { done <- env.RunWith(ctx, agent.Input{Text: "wait"}) }()
			select {
			case <-entered:
			case <-time.After(10 * time.Second):
				t.Fatal("the tool never started")
			}
			cancel()
			return <-done
		}},
		{"tool-only turn out of budget", turn.ExitBudgetExhausted, 2, func(t *testing.T, env *testenv.Env) turn.Result {
			env.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
				return fakellm.Calls(fakellm.ToolCall("noop", fmt.Sprintf(`{"i":%d}`, len(r.Messages))))
			})
			return env.Run("loop")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := telemetrytest.NewReceiver(t)
			tel := setup(t, r, "metadata")
			env := testenv.New(t, testenv.Options{NoBuiltins: true, ExtraTools: []tool.Tool{block, noopTool()}, Configure: func(cfg *agent.Config) {
				cfg.Limits.MaxIterations = 2
				cfg.Observer = tel.Observer
			}})
			res := c.run(t, env)
			if res.Exit != c.exit {
				t.Fatalf("exit %s (%s), want %s", res.Exit, res.Explanation, c.exit)
			}
			flush(t, tel)
			var turns, chats, tools int
			for _, s := range r.Spans() {
				switch {
				case s.Name == "turn":
					turns++
				case strings.HasPrefix(s.Name, "chat "):
					chats++
				case strings.HasPrefix(s.Name, "execute_tool "):
					tools++
					if c.exit == turn.ExitInterrupted {
						if a := telemetrytest.Attrs(s.Attributes); a["error.type"] == nil || s.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
							t.Errorf("interrupted tool span ended with error.type %v, status %v", a["error.type"], s.Status)
						}
					}
				}
			}
			if turns != 1 || chats != len(env.Srv.Requests()) || tools != c.tools {
				t.Errorf("ended spans: %d turn, %d chat (server saw %d requests), %d tool (want %d)", turns, chats, len(env.Srv.Requests()), tools, c.tools)
			}
		})
	}
}
