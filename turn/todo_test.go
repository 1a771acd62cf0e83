package turn_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/tool/builtin"
	"github.com/talaria-agent/talaria/turn"
)

const (
	todoSet   = `{"action":"set","items":[{"id":"parse","text":"write the parser","status":"in_progress"},{"id":"test","text":"test it"}]}`
	todoLine1 = "[>] parse: write the parser (in_progress)"
	todoLine2 = "[ ] test: test it (pending)"
)

// long makes answers worth summarizing.
var long = strings.Repeat("The grammar has another rule to handle. ", 25)

// carries reports how many messages of a request hold the plan's block.
func carries(r fakellm.Request) int {
	n := 0
	for _, m := range r.Messages {
		if strings.Contains(m.Text, todoLine1) && strings.Contains(m.Text, todoLine2) {
			n++
		}
	}
	return n
}

// The model sets a plan: the next request ends with it (after the tool
// result, no earlier byte changed); the session is compressed (in place or
// rotated into a child) with the plan's row summarized away, and the next
// turn's request still carries the plan, once, from the stored state.
func TestTodoSurvivesCompressionAndRotation(t *testing.T) {
	for _, api := range []string{"openai", "anthropic"} {
		for _, rotate := range []bool{false, true} {
			name := api + "/in_place"
			if rotate {
				name = api + "/rotated"
			}
			t.Run(name, func(t *testing.T) {
				env := testenv.New(t, testenv.Options{API: api, NoBuiltins: true, ExtraTools: []tool.Tool{builtin.Todo()},
					Configure: testenv.WithContext(testenv.ContextOptions{Window: 3000, MinTail: 2, Rotate: rotate})})
				env.Srv.Script(
					fakellm.Text("Hello."),
					fakellm.Calls(fakellm.ToolCall("todo", todoSet)),
					fakellm.Text("Planned. "+long),
					fakellm.Text("Parsing. "+long),
					fakellm.Text("Still parsing. "+long),
					fakellm.Text("Parser written."),
				)
				env.Srv.ScriptModel(testenv.SummaryModel, fakellm.Text("The user asked for a parser; work is under way."))
				if res := env.Run("hi"); !res.OK() {
					t.Fatalf("turn 0: %+v", res)
				}
				var seen [][]tool.TodoItem
				res := env.RunWith(context.Background(), agent.Input{Text: "write a parser",
					Hooks: turn.Hooks{Todo: func(items []tool.TodoItem) { seen = append(seen, items) }}})
				if !res.OK() {
					t.Fatalf("turn 1: %+v", res)
				}
				if len(seen) != 1 || len(seen[0]) != 2 || seen[0][0].Status != tool.TodoInProgress || seen[0][1].Status != tool.TodoPending {
					t.Fatalf("Todo hook saw %+v", seen)
				}
				reqs := env.Srv.Requests()
				msgs := reqs[2].Messages
				if last := msgs[len(msgs)-1]; last.Role != "user" || !strings.Contains(last.Text, todoLine1) {
					t.Fatalf("2nd request ends with %+v, want the plan", last)
				}
				if !testenv.IsPrefix(testenv.FieldJSON(reqs[1].Body, "messages"), testenv.FieldJSON(reqs[2].Body, "messages")) {
					t.Error("the plan changed earlier bytes of the request")
				}
				for _, p := range []string{"go on", "and?"} {
					if res := env.Run(p); !res.OK() {
						t.Fatalf("%s: %+v", p, res)
					}
				}
				c, err := env.Agent.Compact(context.Background(), env.Session.ID)
				if err != nil || c.Summarized == 0 || c.Rotated != rotate {
					t.Fatalf("compact: %+v, %v", c, err)
				}
				if res := env.Run("done yet?"); !res.OK() {
					t.Fatalf("after compaction: %+v", res)
				}
				reqs = env.Srv.Requests()
				last := reqs[len(reqs)-1]
				if last.Model == testenv.SummaryModel {
					t.Fatal("the last request is the summary's")
				}
				if n := carries(last); n != 1 {
					t.Fatalf("the request after compression carries the plan %d times, want 1: %+v", n, last.Messages)
				}
				rows := env.RowsOf(c.SessionID, false)
				if items := todoOf(t, rows); len(items) != 2 || items[0].ID != "parse" {
					t.Fatalf("session %s's plan: %+v", c.SessionID, items)
				}
				env.NoViolations()
			})
		}
	}
}

// todoOf decodes the newest live plan row.
func todoOf(t *testing.T, rows []store.Message) []tool.TodoItem {
	t.Helper()
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].Kind == store.RowTodo {
			var items []tool.TodoItem
			if err := json.Unmarshal([]byte(rows[i].Text()), &items); err != nil {
				t.Fatalf("plan row: %v", err)
			}
			return items
		}
	}
	return nil
}

// Invalid arguments give the model an error result that says what is
// wrong, and leave the plan as it was.
func TestTodoInvalidArguments(t *testing.T) {
	cases := []struct {
		name, args, want string
	}{
		{"unknown id", `{"action":"update","items":[{"id":"ship","status":"done"}]}`, `no item with id "ship"`},
		{"duplicate id", `{"action":"set","items":[{"id":"a","text":"x"},{"id":"a","text":"y"}]}`, `id "a" is used twice`},
		{"no text", `{"action":"set","items":[{"id":"a"}]}`, `item "a" has no text`},
		{"update without status", `{"action":"update","items":[{"id":"parse"}]}`, `update needs a status`},
		{"bad status", `{"action":"set","items":[{"id":"a","text":"x","status":"finished"}]}`, `finished`},
		{"no action", `{"items":[]}`, `action`},
	}
	for _, api := range []string{"openai", "anthropic"} {
		for _, tc := range cases {
			t.Run(api+"/"+tc.name, func(t *testing.T) {
				env := testenv.New(t, testenv.Options{API: api, NoBuiltins: true, ExtraTools: []tool.Tool{builtin.Todo()}})
				env.Srv.Script(
					fakellm.Calls(fakellm.ToolCall("todo", todoSet)),
					fakellm.Calls(fakellm.ToolCall("todo", tc.args)),
					fakellm.Text("Noted."),
				)
				if res := env.Run("plan it"); !res.OK() {
					t.Fatalf("turn: %+v", res)
				}
				reqs := env.Srv.Requests()
				msgs := reqs[2].Messages
				var result *fakellm.Msg
				for i := range msgs {
					if msgs[i].Role == "tool" {
						result = &msgs[i]
					}
				}
				if result == nil || !strings.Contains(result.Text, tc.want) {
					t.Fatalf("tool result %+v, want an error saying %q", result, tc.want)
				}
				if n := carries(reqs[2]); n != 1 {
					t.Errorf("the plan is carried %d times after the bad call, want 1 (unchanged)", n)
				}
				plans := 0
				for _, r := range env.Rows() {
					if r.Kind == store.RowTodo {
						plans++
					}
				}
				if plans != 1 {
					t.Errorf("%d plan rows, want 1: a bad call stores nothing", plans)
				}
				env.NoViolations()
			})
		}
	}
}

// A session that outgrows its window is compressed by the turn itself
// (the preflight gate): the request after the pass carries the plan.
func TestTodoSurvivesAutomaticCompression(t *testing.T) {
	for _, api := range []string{"openai", "anthropic"} {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api, NoBuiltins: true, ExtraTools: []tool.Tool{builtin.Todo()},
				Configure: testenv.WithContext(testenv.ContextOptions{Window: 3000, MinTail: 2})})
			env.Srv.Script(fakellm.Text("Hello."), fakellm.Calls(fakellm.ToolCall("todo", todoSet)))
			env.Srv.SetDefault(func(fakellm.Request) fakellm.Step { return fakellm.Text("Working. " + long) })
			env.Srv.ScriptModel(testenv.SummaryModel, fakellm.Text("The user asked for a parser; work is under way."))
			if res := env.Run("hi"); !res.OK() {
				t.Fatalf("turn 0: %+v", res)
			}
			compacted := false
			for n := 1; n <= 12 && !compacted; n++ {
				res := env.Run("go on")
				if !res.OK() {
					t.Fatalf("turn %d: %+v", n, res)
				}
				compacted = res.Compactions > 0
			}
			if !compacted {
				t.Fatal("no compression in 12 turns; the test needs one")
			}
			reqs := env.Srv.Requests()
			last := reqs[len(reqs)-1]
			if n := carries(last); n != 1 {
				t.Fatalf("the request after compression carries the plan %d times, want 1: %+v", n, last.Messages)
			}
			env.NoViolations()
		})
	}
}
