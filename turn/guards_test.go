package turn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/catalogue"
	"github.com/talaria-agent/talaria/guard"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// The same shell call six times: results 3 to 6 carry the notice, results 1
// and 2 do not, the notice is in the stored rows, and the 7th request shows
// all four notices. Each request extends the previous one (results are
// append-only), so the notices never break the cache prefix.
func TestIdenticalCallNoticeOverSixCalls(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api})
			for range 6 {
				env.Srv.Script(fakellm.Calls(fakellm.ToolCall("shell", `{"command":"echo same"}`)))
			}
			env.Srv.Script(fakellm.Text("It keeps printing the same thing."))
			res := env.Run("run echo until it changes")
			if res.Exit != turn.ExitCompleted || res.APICalls != 7 || res.ToolCalls != 6 {
				t.Fatalf("result %+v; want completed after 7 calls and 6 tool calls", res)
			}
			var stored []string
			for _, r := range env.Rows() {
				if r.Role == llm.RoleTool {
					stored = append(stored, r.Text())
				}
			}
			checkNotices(t, "stored", stored)

			reqs := env.Srv.Requests()
			if len(reqs) != 7 {
				t.Fatalf("%d requests, want 7", len(reqs))
			}
			var sent []string
			for _, m := range reqs[6].Messages {
				if m.Role == "tool" {
					sent = append(sent, m.Text)
				}
			}
			checkNotices(t, "7th request", sent)
			for i := 1; i < len(reqs); i++ {
				prev, cur := reqs[i-1].Messages, reqs[i].Messages
				if len(cur) < len(prev) || !slices.EqualFunc(prev, cur[:len(prev)], sameMsg) {
					t.Errorf("request %d does not extend request %d", i+1, i)
				}
			}
			env.NoViolations()
		})
	}
}

// checkNotices wants exactly the 3rd and later results to end with the
// notice for their count.
func checkNotices(t *testing.T, where string, results []string) {
	t.Helper()
	if len(results) != 6 {
		t.Fatalf("%s: %d tool results, want 6", where, len(results))
	}
	for i, text := range results {
		if !strings.HasPrefix(text, "same\n[exit code 0]") {
			t.Errorf("%s: result %d = %q, want the shell output first", where, i+1, text)
		}
		has := guard.HasIdenticalCallNotice(text)
		if want := i >= 2; has != want {
			t.Errorf("%s: result %d has a notice: %v, want %v (%q)", where, i+1, has, want, text)
			continue
		}
		if has && !strings.HasSuffix(text, "\n"+guard.FormatIdenticalCallNotice(i+1, "shell")) {
			t.Errorf("%s: result %d = %q, want the notice for call %d appended", where, i+1, text, i+1)
		}
	}
}

func sameMsg(a, b fakellm.Msg) bool {
	return a.Role == b.Role && a.Text == b.Text && a.ToolCallID == b.ToolCallID &&
		slices.Equal(a.ToolCalls, b.ToolCalls)
}

// The streak's wiring: what resets it and what is exempt, in real turns.
func TestIdenticalCallStreakRules(t *testing.T) {
	same := fakellm.Calls(fakellm.ToolCall("probe", `{"q":"x"}`))
	other := fakellm.Calls(fakellm.ToolCall("probe", `{"q":"y"}`))
	poll := fakellm.Calls(fakellm.ToolCall("poll", `{"id":1}`))
	tests := []struct {
		name string
		// turns are scripted one after the other; each ends with a text.
		turns [][]fakellm.Step
		// changing makes probe's result differ on every call.
		changing bool
		// wantNotice per probe/poll result of the last turn, in order.
		wantNotice []bool
	}{
		{name: "third identical call", turns: [][]fakellm.Step{{same, same, same}}, wantNotice: []bool{false, false, true}},
		{name: "a different call resets", turns: [][]fakellm.Step{{same, same, other, same, same}}, wantNotice: []bool{false, false, false, false, false}},
		{name: "a changed result resets", changing: true, turns: [][]fakellm.Step{{same, same, same, same}}, wantNotice: []bool{false, false, false, false}},
		{name: "a new turn resets", turns: [][]fakellm.Step{{same, same}, {same, same}}, wantNotice: []bool{false, false}},
		{name: "pollers are exempt", turns: [][]fakellm.Step{{poll, poll, poll, poll}}, wantNotice: []bool{false, false, false, false}},
		{name: "a poller in between leaves the streak as it was", turns: [][]fakellm.Step{{same, same, poll, same}}, wantNotice: []bool{false, false, false, true}},
		{name: "invalid arguments repeated count too", turns: [][]fakellm.Step{{
			fakellm.Calls(fakellm.ToolCall("probe", `{"q":1}`)),
			fakellm.Calls(fakellm.ToolCall("probe", `{"q":1}`)),
			fakellm.Calls(fakellm.ToolCall("probe", `{"q":1}`)),
		}}, wantNotice: []bool{false, false, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			probe := testenv.MustFunc(tool.Info{Name: "probe", Description: "test probe", ReadOnly: true,
				Parameters: testenv.ObjectSchema(`{"q":{"type":"string"}}`, "q")},
				func(context.Context, json.RawMessage) (tool.Result, error) {
					if tc.changing {
						return tool.Result{Content: fmt.Sprintf("result %d", n.Add(1))}, nil
					}
					return tool.Result{Content: "result"}, nil
				})
			poller := testenv.MustFunc(tool.Info{Name: "poll", Description: "poll a job", ReadOnly: true, Repeatable: true,
				Parameters: testenv.ObjectSchema(`{"id":{"type":"integer"}}`, "id")},
				func(context.Context, json.RawMessage) (tool.Result, error) {
					return tool.Result{Content: "still running"}, nil
				})
			env := testenv.New(t, testenv.Options{NoBuiltins: true, ExtraTools: []tool.Tool{probe, poller}})
			var res turn.Result
			for i, steps := range tc.turns {
				env.Srv.Script(steps...)
				env.Srv.Script(fakellm.Text("done"))
				if res = env.Run(fmt.Sprintf("turn %d", i+1)); res.Exit != turn.ExitCompleted {
					t.Fatalf("turn %d: %s %s", i+1, res.Exit, res.Explanation)
				}
			}
			var got []bool
			for _, r := range env.Rows() {
				if r.Role == llm.RoleTool && r.TurnID == res.TurnID {
					got = append(got, guard.HasIdenticalCallNotice(r.Text()))
				}
			}
			if !slices.Equal(got, tc.wantNotice) {
				t.Errorf("notices = %v, want %v", got, tc.wantNotice)
			}
		})
	}
}

// Unattended turns stop at guards.tool_loop_stop identical calls; attended
// ones and pollers never do, and the stop works with the notice switched off.
func TestToolLoopStop(t *testing.T) {
	loop := fakellm.Calls(fakellm.ToolCall("list_dir", `{}`))
	tests := []struct {
		name       string
		unattended bool
		guards     func(*turn.GuardConfig)
		wantExit   turn.Exit
		notices    int
	}{
		{"unattended stops", true, func(g *turn.GuardConfig) { g.ToolLoopStop = 4 }, turn.ExitToolLoop, 2},
		{"attended never stops", false, func(g *turn.GuardConfig) { g.ToolLoopStop = 4 }, turn.ExitCompleted, 2},
		{"zero never stops", true, func(g *turn.GuardConfig) { g.ToolLoopStop = 0 }, turn.ExitCompleted, 2},
		{"stops with the notice off", true, func(g *turn.GuardConfig) { g.ToolLoopStop = 4; g.NoIdenticalCalls = true }, turn.ExitToolLoop, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{Configure: func(c *agent.Config) {
				c.Guards = turn.GuardConfig{}
				tc.guards(&c.Guards)
			}})
			// The 4th round calls twice: after the stop, the second call is
			// paired with the loop-stopped marker.
			env.Srv.Script(loop, loop, loop,
				fakellm.Calls(fakellm.ToolCall("list_dir", `{}`), fakellm.ToolCall("list_dir", `{"path":"."}`)),
				loop, fakellm.Text("gave up"))
			res := env.RunWith(context.Background(), agent.Input{Text: "list forever", Unattended: tc.unattended})
			if res.Exit != tc.wantExit {
				t.Fatalf("exit %s (%s), want %s", res.Exit, res.Explanation, tc.wantExit)
			}
			if n := noticeCount(env.Rows()); n != tc.notices {
				t.Errorf("%d results carry the notice, want %d", n, tc.notices)
			}
			if tc.wantExit != turn.ExitToolLoop {
				return
			}
			if res.APICalls != 4 || res.Failure == nil || res.Failure.Reason() != "tool_loop" ||
				!strings.Contains(res.Explanation, "list_dir") || !strings.Contains(res.Explanation, "4 times") {
				t.Fatalf("result %+v; want a tool_loop failure after 4 calls naming the tool and the count", res)
			}
			rows := env.Rows()
			last := rows[len(rows)-2] // the failure row follows
			if last.Role != llm.RoleTool || last.Text() != turn.LoopStoppedToolResult {
				t.Errorf("the skipped call is paired with %q, want the loop-stopped marker", last.Text())
			}
			// The session goes on normally.
			env.Srv.Script(fakellm.Text("ok"))
			if res := env.Run("stop looping"); res.Exit != turn.ExitCompleted {
				t.Fatalf("next turn: %s", res.Exit)
			}
			env.NoViolations()
		})
	}
}

// "I'll now run the tests." with no tool call gets one nudge; the model then
// calls the tool. Role order stays valid under strict validation (assistant
// text → user nudge → assistant tool call), the nudge is stripped at the end
// and the next turn's transcript is valid without it.
func TestSaidButStoppedNudge(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			var env *testenv.Env
			var during *store.Message // the newest user row while the tool runs
			probe := testenv.MustFunc(tool.Info{Name: "run_tests", Description: "runs the tests", Parameters: testenv.ObjectSchema(`{}`)},
				func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
					rows, err := env.Store.Messages(ctx, env.Session.ID, store.MessageQuery{})
					if err != nil {
						return tool.Result{}, err
					}
					for i := range rows {
						if rows[i].Role == llm.RoleUser {
							during = &rows[i]
						}
					}
					return tool.Result{Content: "PASS"}, nil
				})
			env = testenv.New(t, testenv.Options{API: api, ExtraTools: []tool.Tool{probe}})
			env.Srv.Script(
				fakellm.Text("I'll now run the tests."),
				fakellm.Calls(fakellm.ToolCall("run_tests", `{}`)),
				fakellm.Text("All tests pass."),
			)
			res := env.Run("run the tests")
			if res.Exit != turn.ExitCompleted || res.APICalls != 3 || res.ToolCalls != 1 || res.FinalText != "All tests pass." {
				t.Fatalf("result %+v", res)
			}
			second := env.Srv.Requests()[1].Messages
			n := len(second)
			if n < 3 || second[n-2].Role != "assistant" || second[n-2].Text != "I'll now run the tests." ||
				second[n-1].Role != "user" || second[n-1].Text != guard.ContinueNudge {
				t.Fatalf("second request ends %+v; want the announcement then the nudge", second[max(0, n-2):])
			}
			env.NoViolations()
			// While the turn ran, the nudge was a durable row marked as the
			// engine's own.
			if during == nil || during.Text() != guard.ContinueNudge || !during.Synthetic || during.Kind != store.RowNudge {
				t.Errorf("newest user row during the tool call: %+v; want the nudge, synthetic, kind nudge", during)
			}
			rows := env.Rows()
			for _, r := range rows {
				if r.Kind == store.RowNudge || strings.Contains(r.Text(), guard.ContinueNudge) {
					t.Errorf("nudge left in the transcript: %+v", r)
				}
			}
			if got := testenv.Roles(rows); !slices.Equal(got, []string{"user", "assistant", "assistant", "tool", "assistant"}) {
				t.Errorf("roles = %v", got)
			}

			env.Srv.Script(fakellm.Text("You're welcome."))
			if res := env.Run("thanks"); res.Exit != turn.ExitCompleted {
				t.Fatalf("next turn: %s", res.Exit)
			}
			reqs := env.Srv.Requests()
			if body := string(reqs[len(reqs)-1].Body); strings.Contains(body, "you said what you would do next") {
				t.Error("the next turn replays the nudge")
			}
			env.NoViolations()
		})
	}
}

// The nudge is bounded, and replies that ask or report are never nudged.
func TestSaidButStoppedBounds(t *testing.T) {
	tests := []struct {
		name      string
		replies   []string
		wantCalls int
	}{
		{"at most two nudges", []string{"Let me now check the logs.", "Next, I will check the logs.", "I'm going to check the logs."}, 3},
		{"a question is never nudged", []string{"Shall I run the tests now?"}, 1},
		{"a report is never nudged", []string{"I ran the tests and they pass."}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: "anthropic"})
			for _, r := range tc.replies {
				env.Srv.Script(fakellm.Text(r))
			}
			res := env.Run("check the logs")
			if res.Exit != turn.ExitCompleted || res.APICalls != tc.wantCalls {
				t.Fatalf("exit %s after %d calls, want completed after %d", res.Exit, res.APICalls, tc.wantCalls)
			}
			if want := tc.replies[len(tc.replies)-1]; res.FinalText != want {
				t.Errorf("final text %q, want %q", res.FinalText, want)
			}
			env.NoViolations()
		})
	}
}

// Two zero-output empties from the same model: the fallback answers after
// exactly two primary calls.
func TestEmptyDeterministicGoesToFallback(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api, Fallbacks: []string{"backup-model"}})
			env.Srv.ScriptModel("test-model", fakellm.Empty(), fakellm.Empty(), fakellm.Empty(), fakellm.Empty())
			env.Srv.ScriptModel("backup-model", fakellm.Text("The backup answers."))
			res := env.Run("hello?")
			if res.Exit != turn.ExitCompleted || res.FinalText != "The backup answers." {
				t.Fatalf("result %+v", res)
			}
			if got := modelCalls(env.Srv.Requests()); got["test-model"] != 2 || got["backup-model"] != 1 {
				t.Fatalf("calls per model %v; want 2 primary, 1 fallback", got)
			}
			if len(res.Routes) != 2 || res.Routes[0].Outcome != "empty_response" {
				t.Errorf("routes %+v", res.Routes)
			}
			env.NoViolations()
		})
	}
}

func modelCalls(reqs []fakellm.Request) map[string]int {
	out := map[string]int{}
	for _, r := range reqs {
		out[r.Model]++
	}
	return out
}

// The empty-response guard in real turns: one retry for one empty, a nudge
// for an empty after a tool round, fail-open without usage, one retry for
// an expensive prompt, and a result that says what giving up cost.
func TestEmptyResponses(t *testing.T) {
	noUsage := fakellm.Step{Finish: "stop", NoUsage: true}
	// A reported nonzero output (say, whitespace tokens) is never
	// deterministic, so the cost rule alone decides. test-model costs $1000
	// per million input tokens when priced: 1000 tokens are $1.00.
	emptyIn := func(in int64) fakellm.Step {
		return fakellm.Step{Finish: "stop", Usage: &fakellm.Usage{Input: in, Output: 1}}
	}
	read := fakellm.Calls(fakellm.ToolCall("list_dir", `{}`))
	tests := []struct {
		name   string
		steps  []fakellm.Step
		priced bool
		// subscription marks the route included in a subscription.
		subscription bool
		wantExit     turn.Exit
		wantCalls    int
		// wantNudgeIn lists requests (0-based) whose last message is the
		// empty-retry nudge.
		wantNudgeIn []int
		wantMessage []string
		retryable   bool
	}{
		{name: "an empty then text is one retry", steps: []fakellm.Step{fakellm.Empty(), fakellm.Text("hi")},
			wantExit: turn.ExitCompleted, wantCalls: 2},
		{name: "an empty after a tool round is nudged", steps: []fakellm.Step{read, fakellm.Empty(), fakellm.Text("the dir is empty")},
			wantExit: turn.ExitCompleted, wantCalls: 3, wantNudgeIn: []int{2}},
		{name: "the nudge is sent once per streak", steps: []fakellm.Step{read, noUsage, noUsage, fakellm.Text("ok")},
			wantExit: turn.ExitCompleted, wantCalls: 4, wantNudgeIn: []int{2, 3}},
		{name: "missing usage keeps the full budget", steps: []fakellm.Step{noUsage, noUsage, noUsage, noUsage},
			wantExit: turn.ExitFailed, wantCalls: 4, retryable: true,
			wantMessage: []string{"empty answer 4 times", "cost unknown"}},
		{name: "deterministic with no fallback gives up after two", steps: []fakellm.Step{fakellm.Empty(), fakellm.Empty(), fakellm.Text("never")},
			wantExit: turn.ExitFailed, wantCalls: 2,
			wantMessage: []string{"empty answer twice", "would not help"}},
		{name: "an expensive prompt gets one retry", priced: true, steps: []fakellm.Step{emptyIn(1000), emptyIn(1000), fakellm.Text("never")},
			wantExit: turn.ExitFailed, wantCalls: 2, retryable: true,
			wantMessage: []string{"empty answer twice", "estimated cost $2.00"}},
		{name: "a subscription route keeps the full budget and shows no list price", priced: true, subscription: true,
			steps:    []fakellm.Step{emptyIn(1000), emptyIn(1000), emptyIn(1000), emptyIn(1000)},
			wantExit: turn.ExitFailed, wantCalls: 4, retryable: true,
			wantMessage: []string{"empty answer 4 times", "included in the subscription"}},
		{name: "a cheap prompt keeps the full budget", priced: true,
			steps:    []fakellm.Step{emptyIn(100), emptyIn(100), emptyIn(100), fakellm.Text("ok")},
			wantExit: turn.ExitCompleted, wantCalls: 4},
		{name: "unknown pricing keeps the full budget", steps: []fakellm.Step{emptyIn(1_000), emptyIn(1_000), emptyIn(1_000), emptyIn(1_000)},
			wantExit: turn.ExitFailed, wantCalls: 4, retryable: true,
			wantMessage: []string{"empty answer 4 times", "cost unknown"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: "anthropic", Configure: func(c *agent.Config) {
				if tc.priced {
					c.Catalogue = catalogue.New(map[string]catalogue.Model{"test-model": {InputPerMTok: 1000, OutputPerMTok: 1000}})
				}
				c.Routes[0].Subscription = tc.subscription
			}})
			env.Srv.Script(tc.steps...)
			res := env.Run("say something")
			if res.Exit != tc.wantExit || res.APICalls != tc.wantCalls {
				t.Fatalf("exit %s after %d calls (%s); want %s after %d", res.Exit, res.APICalls, res.Explanation, tc.wantExit, tc.wantCalls)
			}
			wantPricing := turn.PricingUnknown
			switch {
			case tc.subscription:
				wantPricing = turn.PricingSubscription
			case tc.priced:
				wantPricing = turn.PricingPriced
			}
			if res.Pricing != wantPricing {
				t.Errorf("pricing %q, want %q", res.Pricing, wantPricing)
			}
			for i, r := range env.Srv.Requests() {
				last := r.Messages[len(r.Messages)-1]
				nudged := last.Role == "user" && strings.Contains(last.Text, guard.EmptyRetryNudge)
				if want := slices.Contains(tc.wantNudgeIn, i); nudged != want {
					t.Errorf("request %d ends with the empty-retry nudge: %v, want %v", i, nudged, want)
				}
			}
			if tc.wantExit == turn.ExitFailed {
				if res.Failure == nil || res.Failure.Reason() != "empty_response" || res.Failure.Retryable != tc.retryable {
					t.Fatalf("failure %+v; want empty_response, retryable=%v", res.Failure, tc.retryable)
				}
				for _, w := range tc.wantMessage {
					if !strings.Contains(res.Failure.Message, w) {
						t.Errorf("failure message %q does not say %q", res.Failure.Message, w)
					}
				}
				if tc.subscription && (strings.Contains(res.Failure.Message, "$") || res.CostUSD != 0) {
					t.Errorf("a subscription route was priced: message %q cost %v", res.Failure.Message, res.CostUSD)
				}
			}
			for _, r := range env.Rows() {
				if r.Kind == store.RowNudge {
					t.Errorf("nudge left in the transcript: %q", r.Text())
				}
			}
			env.NoViolations()
			// Whatever happened, the next turn is valid.
			env.Srv.Script(fakellm.Text("ok"))
			if res := env.Run("again"); res.Exit != turn.ExitCompleted {
				t.Fatalf("next turn: %s", res.Exit)
			}
			env.NoViolations()
		})
	}
}

// Invalid UTF-8 and lone surrogates never reach the wire: not in a tool
// result, a tool description, a schema, a replayed call's arguments or the
// user's message. Every request body is valid JSON and valid UTF-8 without
// surrogate escapes, a surrogate pair becomes its character, and the stored
// result is clean.
func TestCleanTextAtTheChokepoints(t *testing.T) {
	const dirty = "ok \xff\xfe bad \xed\xa0\x80 lone \xed\xa0\xbd\xed\xb8\x80 pair"
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			// A raw tool, not a tool.Func (which cleans its own result):
			// the dirty result must be cleaned at the chokepoint. Raw
			// schema JSON reaches the body as is (Anthropic's input_schema,
			// OpenAI's parameters): its escape must go.
			cat := &rawTool{info: tool.Info{Name: "cat_binary", Description: "prints a binary file \xc3\x28", ReadOnly: true,
				Parameters: testenv.ObjectSchema(`{"note":{"type":"string","description":"bad \udc00 escape"}}`)},
				run: func(context.Context, json.RawMessage) (tool.Result, error) {
					return tool.Result{Content: dirty}, nil
				}}
			env := testenv.New(t, testenv.Options{API: api, ExtraTools: []tool.Tool{cat}})
			// The model's own arguments carry a lone surrogate escape; they
			// are replayed in the second request.
			env.Srv.Script(fakellm.Calls(fakellm.ToolCall("cat_binary", `{"note":"x \ud83d"}`)), fakellm.Text("It is binary \U0001F600."))
			res := env.Run("cat it \xed\xb0\x80 please")
			if res.Exit != turn.ExitCompleted || res.APICalls != 2 {
				t.Fatalf("result %+v", res)
			}
			for i, r := range env.Srv.Requests() {
				checkWireText(t, i, r.Body)
			}
			second := env.Srv.Requests()[1]
			var sent string
			for _, m := range second.Messages {
				if m.Role == "tool" {
					sent = m.Text
				}
			}
			if want := "ok \uFFFD\uFFFD bad \uFFFD lone \U0001F600 pair"; sent != want {
				t.Errorf("tool result on the wire %q, want %q", sent, want)
			}
			for _, r := range env.Rows() {
				if r.Role == llm.RoleTool && !utf8.ValidString(r.Text()) {
					t.Errorf("stored tool result is not valid UTF-8: %q", r.Text())
				}
			}
			if !utf8.ValidString(res.FinalText) || res.FinalText != "It is binary \U0001F600." {
				t.Errorf("final text %q", res.FinalText)
			}
			env.NoViolations()
		})
	}
}

// The final answer is made valid UTF-8 where it leaves the loop, in the
// result and in the stored row, whatever a provider adapter let through:
// a whole answer, and the partial one an interrupt keeps.
func TestCleanFinalAnswer(t *testing.T) {
	const dirty, want = "caf\xe9 \xed\xa0\x80 ok", "caf\uFFFD \uFFFD ok"
	for _, interrupt := range []bool{false, true} {
		t.Run(fmt.Sprintf("interrupted=%v", interrupt), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p := rawProvider{text: dirty}
			wantExit := turn.ExitCompleted
			if interrupt {
				p.interrupt, wantExit = cancel, turn.ExitInterrupted
			}
			env := testenv.New(t, testenv.Options{Configure: func(c *agent.Config) { c.Routes[0].Provider = p }})
			res := env.RunWith(ctx, agent.Input{Text: "hi"})
			if res.Exit != wantExit {
				t.Fatalf("exit %s (%s), want %s", res.Exit, res.Explanation, wantExit)
			}
			if res.FinalText != want {
				t.Errorf("final text %q, want %q", res.FinalText, want)
			}
			rows := env.Rows()
			if got := rows[len(rows)-1].Text(); got != want {
				t.Errorf("stored answer %q, want %q", got, want)
			}
		})
	}
}

// rawProvider answers every request with text exactly as given, bypassing
// any wire encoding that would clean it. With interrupt set it streams the
// text, cancels the turn and fails as a cancelled call does.
type rawProvider struct {
	text      string
	interrupt context.CancelFunc
}

func (rawProvider) Name() string { return "raw" }

func (p rawProvider) Stream(ctx context.Context, _ *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		if !yield(llm.Event{Type: llm.EventTextDelta, Text: p.text}, nil) {
			return
		}
		if p.interrupt != nil {
			p.interrupt()
			<-ctx.Done()
			yield(llm.Event{}, &llm.APIError{Provider: "raw", Message: "canceled", Transport: llm.TransportCanceled,
				MidStream: true, PartialText: p.text, Err: ctx.Err()})
			return
		}
		resp := &llm.Response{Message: llm.NewText(llm.RoleAssistant, p.text), FinishReason: llm.FinishStop}
		yield(llm.Event{Type: llm.EventDone, Response: resp}, nil)
	}
}

// loneSurrogateEscape matches a \uD800–\uDFFF escape; Go's encoder writes
// valid characters raw, so any such escape on the wire is a defect.
var loneSurrogateEscape = regexp.MustCompile(`\\u[dD][89a-fA-F][0-9a-fA-F]{2}`)

func checkWireText(t *testing.T, i int, body []byte) {
	t.Helper()
	if !utf8.Valid(body) {
		t.Errorf("request %d body is not valid UTF-8", i)
	}
	if !json.Valid(body) {
		t.Errorf("request %d body is not valid JSON", i)
	}
	if m := loneSurrogateEscape.Find(body); m != nil {
		t.Errorf("request %d body has a surrogate escape %s", i, m)
	}
}

// Engine bookkeeping never reaches the wire: no store field names in any
// raw request body, no failure row, no scaffolding from an earlier turn.
func TestPrivateFieldsNeverOnTheWire(t *testing.T) {
	private := []string{`"synthetic"`, `"display_kind"`, `"kind"`, `"api_content"`, `"turn_id"`, `"archived"`, `"reported"`, `"tool_name"`, `"finish_reason":`}
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api, Configure: func(c *agent.Config) { c.Limits.MaxIterations = 2 }})
			// Turn 1 fails (deterministic empties): it leaves a failure row.
			env.Srv.Script(fakellm.Empty(), fakellm.Empty())
			if res := env.Run("first"); res.Exit != turn.ExitFailed {
				t.Fatalf("turn 1: %s", res.Exit)
			}
			// Turn 2: a nudge, a tool round, then the budget notice and the
			// grace call.
			env.Srv.Script(
				fakellm.Text("Let me now list the files."),
				fakellm.Calls(fakellm.ToolCall("list_dir", `{}`)),
				fakellm.Text("Nothing there."),
			)
			if res := env.Run("second"); res.Exit != turn.ExitBudgetExhausted || res.APICalls != 3 {
				t.Fatalf("turn 2: %s after %d calls", res.Exit, res.APICalls)
			}
			env.Srv.Script(fakellm.Text("fine"))
			if res := env.Run("third"); res.Exit != turn.ExitCompleted {
				t.Fatalf("turn 3: %s", res.Exit)
			}
			reqs := env.Srv.Requests()
			for i, r := range reqs {
				body := string(r.Body)
				for _, p := range private {
					if strings.Contains(body, p) {
						t.Errorf("request %d carries %s", i, p)
					}
				}
				if strings.Contains(body, "Turn failed") {
					t.Errorf("request %d carries the failure row", i)
				}
			}
			last := string(reqs[len(reqs)-1].Body)
			for _, s := range []string{guard.ContinueNudge, turn.BudgetNotice} {
				if strings.Contains(last, s[:30]) {
					t.Errorf("the last request replays scaffolding %q", s[:30])
				}
			}
			failures := 0
			for _, r := range env.Rows() {
				switch {
				case r.Role == llm.RoleUser && (r.Synthetic || r.Kind != store.RowNormal):
					t.Errorf("user row %q left marked synthetic=%v kind=%q", r.Text(), r.Synthetic, r.Kind)
				case r.Kind == store.RowFailure:
					failures++
					if !r.Synthetic {
						t.Errorf("failure row %q is not marked synthetic", r.Text())
					}
				}
			}
			if failures != 1 {
				t.Errorf("%d failure rows, want 1", failures)
			}
			env.NoViolations()
		})
	}
}

// Scaffolding left by a turn that died before its finalizer (a nudge and a
// notice written durably, then kill -9) is removed before the next turn's
// first request, so it is never replayed as part of the user's message.
func TestCrashLeftoverScaffoldingStripped(t *testing.T) {
	env := testenv.New(t, testenv.Options{API: "anthropic"})
	env.Srv.Script(fakellm.Text("I'll now look."))
	env.Srv.Script(fakellm.Text("done"))
	if res := env.Run("look"); res.Exit != turn.ExitCompleted {
		t.Fatalf("turn 1: %s", res.Exit)
	}
	leftover := []*store.Message{
		{TurnID: "dead-turn", Message: llm.NewText(llm.RoleUser, guard.ContinueNudge), Kind: store.RowNudge, Synthetic: true},
		{TurnID: "dead-turn", Message: llm.NewText(llm.RoleUser, turn.BudgetNotice), Kind: store.RowNotice, Synthetic: true},
	}
	// An unfenced write stands in for the dead process's fenced one.
	if err := env.Store.Append(context.Background(), store.Fence{SessionID: env.Session.ID}, leftover...); err != nil {
		t.Fatal(err)
	}
	env.Srv.Reset()
	env.Srv.Script(fakellm.Text("hello"))
	if res := env.Run("next question"); res.Exit != turn.ExitCompleted {
		t.Fatalf("turn 2: %s", res.Exit)
	}
	reqs := env.Srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	msgs := reqs[0].Messages
	if last := msgs[len(msgs)-1]; last.Role != "user" || last.Text != "next question" {
		t.Errorf("the user's message went out as %q", last.Text)
	}
	for _, r := range env.Rows() {
		if r.Synthetic && r.Role == llm.RoleUser {
			t.Errorf("leftover scaffolding still stored: %q", r.Text())
		}
	}
	env.NoViolations()
}

// Each guard switch turns its guard off, and the zero GuardConfig means
// every guard on.
func TestGuardSwitches(t *testing.T) {
	same := fakellm.Calls(fakellm.ToolCall("list_dir", `{}`))
	tests := []struct {
		name      string
		guards    *turn.GuardConfig // nil: leave the config's zero value
		steps     []fakellm.Step
		wantCalls int
		check     func(t *testing.T, env *testenv.Env, res turn.Result)
	}{
		{name: "zero config: identical calls on", steps: []fakellm.Step{same, same, same, fakellm.Text("done")}, wantCalls: 4,
			check: func(t *testing.T, env *testenv.Env, _ turn.Result) {
				if n := noticeCount(env.Rows()); n != 1 {
					t.Errorf("%d notices, want 1", n)
				}
			}},
		{name: "identical calls off", guards: &turn.GuardConfig{NoIdenticalCalls: true},
			steps: []fakellm.Step{same, same, same, fakellm.Text("done")}, wantCalls: 4,
			check: func(t *testing.T, env *testenv.Env, _ turn.Result) {
				if n := noticeCount(env.Rows()); n != 0 {
					t.Errorf("%d notices, want none", n)
				}
			}},
		{name: "zero config: said-but-stopped on", steps: []fakellm.Step{fakellm.Text("Let me now check."), fakellm.Text("Checked.")}, wantCalls: 2},
		{name: "said-but-stopped off", guards: &turn.GuardConfig{NoSaidButStopped: true},
			steps: []fakellm.Step{fakellm.Text("Let me now check."), fakellm.Text("Checked.")}, wantCalls: 1,
			check: func(t *testing.T, _ *testenv.Env, res turn.Result) {
				if res.FinalText != "Let me now check." {
					t.Errorf("final text %q", res.FinalText)
				}
			}},
		{name: "zero config: empty response on", steps: []fakellm.Step{fakellm.Empty(), fakellm.Text("hi")}, wantCalls: 2},
		{name: "empty response off", guards: &turn.GuardConfig{NoEmptyResponse: true},
			steps: []fakellm.Step{fakellm.Empty(), fakellm.Text("hi")}, wantCalls: 1,
			check: func(t *testing.T, _ *testenv.Env, res turn.Result) {
				if res.Exit != turn.ExitCompleted || res.FinalText != "" {
					t.Errorf("exit %s, final %q; want the empty answer taken as it is", res.Exit, res.FinalText)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{Configure: func(c *agent.Config) {
				if tc.guards != nil {
					c.Guards = *tc.guards
				}
			}})
			env.Srv.Script(tc.steps...)
			res := env.Run("go")
			if res.APICalls != tc.wantCalls {
				t.Fatalf("%d calls (%s %s), want %d", res.APICalls, res.Exit, res.Explanation, tc.wantCalls)
			}
			if tc.check != nil {
				tc.check(t, env, res)
			}
		})
	}
}

func noticeCount(rows []store.Message) int {
	n := 0
	for _, r := range rows {
		if r.Role == llm.RoleTool && guard.HasIdenticalCallNotice(r.Text()) {
			n++
		}
	}
	return n
}

// guards.empty_retries: 0 means no retry, and an empty or all-zero usage
// object is no proof of zero output: two such empties do not end the turn
// as deterministic, they get the retry budget.
func TestEmptyRetriesZeroAndMeaninglessUsage(t *testing.T) {
	zeroUsage := fakellm.Step{Finish: "stop", Usage: &fakellm.Usage{}}
	tests := []struct {
		name      string
		noRetry   bool
		steps     []fakellm.Step
		wantExit  turn.Exit
		wantCalls int
	}{
		{name: "zero retries ends at the first empty", noRetry: true,
			steps: []fakellm.Step{fakellm.Empty(), fakellm.Text("never")}, wantExit: turn.ExitFailed, wantCalls: 1},
		{name: "all-zero usage keeps the retry budget",
			steps: []fakellm.Step{zeroUsage, zeroUsage, fakellm.Text("here it is")}, wantExit: turn.ExitCompleted, wantCalls: 3},
	}
	for _, tc := range tests {
		for _, api := range testenv.APIs {
			t.Run(tc.name+"/"+api, func(t *testing.T) {
				env := testenv.New(t, testenv.Options{API: api, Configure: func(c *agent.Config) {
					c.Guards.NoEmptyRetry = tc.noRetry
				}})
				env.Srv.Script(tc.steps...)
				res := env.Run("say something")
				if res.Exit != tc.wantExit || res.APICalls != tc.wantCalls {
					t.Fatalf("exit %s after %d calls (%s); want %s after %d", res.Exit, res.APICalls, res.Explanation, tc.wantExit, tc.wantCalls)
				}
				if tc.wantExit == turn.ExitFailed && (res.Failure == nil || res.Failure.Reason() != "empty_response") {
					t.Fatalf("failure %+v; want empty_response", res.Failure)
				}
				env.NoViolations()
			})
		}
	}
}

// rawTool is a tool.Tool that is not a tool.Func, which would clean its
// result (and recover its panics) itself.
type rawTool struct {
	info tool.Info
	run  func(context.Context, json.RawMessage) (tool.Result, error)
}

func (r *rawTool) Info() tool.Info { return r.info }

func (r *rawTool) Run(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	return r.run(ctx, args)
}
