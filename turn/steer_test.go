package turn_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/catalogue"
	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

const steerText = "Also list the README while you are at it."

// A message sent while the first tool round of a three-round turn runs
// joins the turn after that round: the 2nd request ends with it, the 1st
// does not have it, every call keeps its result next to it (strict wire
// validation) and the stored rows show it between the results and the
// next answer.
func TestSteerJoinsAtTheNextIterationBoundary(t *testing.T) {
	for _, api := range []string{"openai", "anthropic"} {
		t.Run(api, func(t *testing.T) {
			steer := turn.NewSteering()
			var once sync.Once
			probe := probeTool("probe", func() {
				once.Do(func() { steer.Send(turn.SteerMessage{ID: "m2", Text: steerText}) })
			})
			env := testenv.New(t, testenv.Options{API: api, NoBuiltins: true, ExtraTools: []tool.Tool{probe}})
			env.Srv.Script(
				// Two parallel calls: the steer arrives inside the round and
				// must wait for both results.
				fakellm.Calls(fakellm.ToolCall("probe", `{"n":1}`), fakellm.ToolCall("probe", `{"n":2}`)),
				fakellm.Calls(fakellm.ToolCall("probe", `{"n":3}`)),
				fakellm.Calls(fakellm.ToolCall("probe", `{"n":4}`)),
				fakellm.Text("Probed four times and noted the README."),
			)
			var joined []turn.SteerMessage
			res := env.RunWith(context.Background(), agent.Input{Text: "probe it", Steer: steer,
				Hooks: turn.Hooks{Steered: func(m turn.SteerMessage) { joined = append(joined, m) }}})
			left := steer.Close()
			if !res.OK() {
				t.Fatalf("turn: %+v", res)
			}
			env.NoViolations()
			if len(left) != 0 || len(joined) != 1 || joined[0].ID != "m2" {
				t.Fatalf("joined %+v, left %+v; want m2 joined", joined, left)
			}
			reqs := env.Srv.Requests()
			if len(reqs) != 4 {
				t.Fatalf("%d requests, want 4", len(reqs))
			}
			if strings.Contains(string(reqs[0].Body), steerText) {
				t.Fatal("the steer is in the first request, sent before the turn ran")
			}
			second := reqs[1].Messages
			lastMsg := second[len(second)-1]
			if lastMsg.Role != "user" || !strings.Contains(lastMsg.Text, steerText) {
				t.Fatalf("2nd request ends with %+v, want the steer as a user message", lastMsg)
			}
			for i, r := range reqs[1:] {
				if n := strings.Count(string(r.Body), steerText); n != 1 {
					t.Errorf("request %d carries the steer %d times", i+2, n)
				}
			}
			// Stored: user, assistant(2 calls), tool, tool, steer, assistant, ...
			rows := env.Rows()
			got := make([]string, len(rows))
			for i, r := range rows {
				got[i] = string(r.Role)
				if r.Kind == store.RowSteer {
					got[i] = "steer"
				}
			}
			want := []string{"user", "assistant", "tool", "tool", "steer", "assistant", "tool", "assistant", "tool", "assistant"}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("rows %v, want %v", got, want)
			}
		})
	}
}

// A message that arrives while the turn's last call is running does not
// join it (the answer is already being written): Close gives it back, and
// it runs as the next turn.
func TestSteerAfterTheLastCallBecomesTheNextTurn(t *testing.T) {
	steer := turn.NewSteering()
	env := testenv.New(t, testenv.Options{NoBuiltins: true, ExtraTools: []tool.Tool{probeTool("probe", nil)}})
	env.Srv.Script(
		fakellm.Calls(fakellm.ToolCall("probe", `{}`)),
		fakellm.Step{Respond: func(fakellm.Request) fakellm.Step {
			steer.Send(turn.SteerMessage{ID: "late", Text: steerText})
			return fakellm.Text("Probed.")
		}},
		fakellm.Text("Here is the README."),
	)
	res := env.RunWith(context.Background(), agent.Input{Text: "probe it", Steer: steer})
	left := steer.Close()
	if !res.OK() || res.FinalText != "Probed." {
		t.Fatalf("turn: %+v", res)
	}
	if len(left) != 1 || left[0].ID != "late" {
		t.Fatalf("left %+v, want the late message back", left)
	}
	if steer.Send(turn.SteerMessage{Text: "too late"}) {
		t.Fatal("a closed Steering took a message")
	}
	for _, r := range env.Rows() {
		if strings.Contains(r.Text(), steerText) {
			t.Fatalf("the late message joined the finished turn: %+v", r)
		}
	}
	if res := env.Run(left[0].Text); !res.OK() || res.FinalText != "Here is the README." {
		t.Fatalf("next turn: %+v", res)
	}
	env.NoViolations()
	reqs := env.Srv.Requests()
	if last := reqs[2].Messages[len(reqs[2].Messages)-1]; last.Role != "user" || last.Text != steerText {
		t.Fatalf("next turn's request ends with %+v", last)
	}
}

// The pressure-warning test's models: the same text is over the warning
// ratio of "small" and far under that of "big".
func pressureEnv(t *testing.T, text string, events *[]turn.Pressure) (*testenv.Env, func(model string) turn.Result) {
	// One copy of the text alone is over 85% of "small"; six are ~6% of "big".
	est := compact.EstimateText(text)
	env := testenv.New(t, testenv.Options{NoBuiltins: true, Model: "small", ExtraTools: []tool.Tool{probeTool("probe", nil)},
		Configure: func(c *agent.Config) {
			c.Catalogue = catalogue.New(map[string]catalogue.Model{
				"small": {Window: est * 110 / 100, MaxOutput: 100}, "big": {Window: 100 * est, MaxOutput: 100}})
		}})
	env.Srv.SetDefault(func(fakellm.Request) fakellm.Step { return fakellm.Text("ok") })
	run := func(model string) turn.Result {
		t.Helper()
		routes := []turn.Route{{Provider: testenv.Provider(env.Srv, "openai", "primary"), Model: model}}
		env.SetRoutes(routes)
		return env.RunWith(context.Background(), agent.Input{Text: text,
			Hooks: turn.Hooks{ContextPressure: func(p turn.Pressure) { *events = append(*events, p) }}})
	}
	return env, run
}

// With compression off, a request past the warning ratio is warned about
// once — typed, with what to do — not again on the next turns while the
// session stays over (a fresh agent each turn: the state is the
// session's, not the process's), and again only after the session went
// back under and crossed once more.
func TestContextPressureWarnsOnceAndRearms(t *testing.T) {
	var events []turn.Pressure
	text := strings.Repeat("The quick brown fox jumps over the lazy dog near the riverbank. ", 60)
	env, run := pressureEnv(t, text, &events)

	steps := []struct {
		model string
		warns int // events so far after the turn
	}{
		{"small", 1}, // crosses: warned
		{"small", 1}, // still over: silent
		{"small", 1}, // still over: silent
		{"big", 1},   // back under: re-armed, nothing said
		{"small", 2}, // crosses again: warned again
		{"small", 2},
	}
	for i, s := range steps {
		res := run(s.model)
		if !res.OK() {
			t.Fatalf("turn %d: %+v", i+1, res)
		}
		if len(events) != s.warns {
			t.Fatalf("after turn %d on %s: %d warnings, want %d (%+v)", i+1, s.model, len(events), s.warns, events)
		}
	}
	p := events[0]
	if p.Compression != "disabled" || p.Model != "small" || p.Tokens < int(p.Ratio*float64(p.Window)) || p.Advice == "" {
		t.Fatalf("warning %+v", p)
	}
	var kinds []string
	for _, r := range env.Rows() {
		if r.Kind == store.RowPressure || r.Kind == store.RowPressureCleared {
			if r.Role != llm.RoleAssistant || !r.Kind.DisplayOnly() {
				t.Fatalf("pressure row %+v", r)
			}
			kinds = append(kinds, string(r.Kind))
		}
	}
	if strings.Join(kinds, ",") != "pressure,pressure_cleared,pressure" {
		t.Fatalf("pressure rows %v", kinds)
	}
	for _, r := range env.Srv.Requests() {
		if strings.Contains(string(r.Body), "Context warning") {
			t.Fatal("a display-only pressure row was sent to the model")
		}
	}
	env.NoViolations()
}
