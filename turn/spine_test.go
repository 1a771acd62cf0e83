package turn_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// Experiment A: a text-only turn is one API call, no tool round, finalized,
// and the transcript is exactly user, assistant.
func TestTextOnlyTurn(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api})
			env.Srv.Script(fakellm.Text("Hello there."))
			res := env.Run("hi")
			if res.Exit != turn.ExitCompleted || res.APICalls != 1 || res.ToolRounds != 0 || res.Iterations != 1 {
				t.Fatalf("result = %+v; want completed, 1 call, 0 tool rounds", res)
			}
			if res.FinalText != "Hello there." {
				t.Errorf("final text %q", res.FinalText)
			}
			rows := env.Rows()
			if got := testenv.Roles(rows); !slices.Equal(got, []string{"user", "assistant"}) {
				t.Fatalf("roles = %v", got)
			}
			if rows[0].Text() != "hi" || rows[1].Text() != "Hello there." {
				t.Errorf("rows = %q, %q", rows[0].Text(), rows[1].Text())
			}
			if n := len(env.Srv.Requests()); n != 1 {
				t.Errorf("server saw %d requests, want 1", n)
			}
			env.NoViolations()
		})
	}
}

// Experiment B: after one read-only tool round, the second request carries
// the assistant's tool call and its paired result.
func TestReadOnlyToolThenText(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api})
			if err := os.WriteFile(filepath.Join(env.Workspace, "a.txt"), []byte("the secret is 42\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			env.Srv.Script(
				fakellm.Calls(fakellm.ToolCall("read_file", `{"path":"a.txt"}`)),
				fakellm.Text("The file says the secret is 42."),
			)
			res := env.Run("what does a.txt say?")
			if res.Exit != turn.ExitCompleted || res.APICalls != 2 || res.ToolRounds != 1 || res.ToolCalls != 1 {
				t.Fatalf("result = %+v", res)
			}
			reqs := env.Srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			second := reqs[1].Messages
			var callID string
			for _, m := range second {
				if m.Role == "assistant" && len(m.ToolCalls) == 1 && m.ToolCalls[0].Name == "read_file" {
					callID = m.ToolCalls[0].ID
				}
			}
			if callID == "" {
				t.Fatalf("second request has no assistant read_file call: %+v", second)
			}
			found := false
			for _, m := range second {
				if m.Role == "tool" && m.ToolCallID == callID && strings.Contains(m.Text, "the secret is 42") {
					found = true
				}
			}
			if !found {
				t.Fatalf("second request has no paired result for %s: %+v", callID, second)
			}
			if got := testenv.Roles(env.Rows()); !slices.Equal(got, []string{"user", "assistant", "tool", "assistant"}) {
				t.Errorf("roles = %v", got)
			}
			env.NoViolations()
		})
	}
}

// Experiment C: with max_iterations=2 and a model that always calls tools,
// the turn ends budget_exhausted after one grace call that offered no
// tools, and the result explains why.
func TestIterationBudgetGraceCall(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api, Configure: func(c *agent.Config) { c.Limits.MaxIterations = 2 }})
			env.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
				if len(r.Tools) == 0 {
					return fakellm.Text("I listed the directory twice; nothing is left to do.")
				}
				return fakellm.Calls(fakellm.ToolCall("list_dir", `{}`))
			})
			res := env.Run("keep listing")
			if res.Exit != turn.ExitBudgetExhausted || !res.GraceCall {
				t.Fatalf("exit = %s grace=%v; want budget_exhausted after a grace call", res.Exit, res.GraceCall)
			}
			if res.APICalls != 3 || res.ToolRounds != 2 {
				t.Fatalf("api calls %d, tool rounds %d; want 3 and 2", res.APICalls, res.ToolRounds)
			}
			reqs := env.Srv.Requests()
			for i, r := range reqs {
				offered := len(r.Tools) > 0
				if want := i < 2; offered != want {
					t.Errorf("request %d offered tools=%v, want %v", i, offered, want)
				}
			}
			if !strings.Contains(res.Explanation, "max_iterations") {
				t.Errorf("explanation %q does not say the budget ran out", res.Explanation)
			}
			if res.FinalText == "" {
				t.Error("the grace call's summary was not kept")
			}
			for _, r := range env.Rows() {
				if r.Kind == store.RowNotice || r.Kind == store.RowNudge {
					t.Errorf("scaffolding row left in the transcript: %+v", r)
				}
			}
			env.NoViolations()
			// The session goes on normally.
			env.Srv.SetDefault(nil)
			env.Srv.Script(fakellm.Text("continuing"))
			if res := env.Run("continue"); res.Exit != turn.ExitCompleted {
				t.Fatalf("next turn: %s", res.Exit)
			}
			env.NoViolations()
		})
	}
}

// Invariant 2: the assistant row holding tool calls is durable before any
// of those tools runs. The test tool looks in the database from inside.
func TestToolCallRowDurableBeforeToolRuns(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			var env *testenv.Env
			var sawRow, ran bool
			probe := testenv.MustFunc(tool.Info{Name: "probe", Description: "test probe", Parameters: testenv.ObjectSchema(`{}`)},
				func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
					ran = true
					rows, err := env.Store.Messages(ctx, env.Session.ID, store.MessageQuery{})
					if err != nil {
						return tool.Result{}, err
					}
					last := rows[len(rows)-1]
					sawRow = last.Role == llm.RoleAssistant && len(last.ToolCalls) == 1 && last.ToolCalls[0].Name == "probe"
					return tool.Result{Content: "probed"}, nil
				})
			env = testenv.New(t, testenv.Options{API: api, ExtraTools: []tool.Tool{probe}})
			env.Srv.Script(fakellm.Calls(fakellm.ToolCall("probe", `{}`)), fakellm.Text("done"))
			if res := env.Run("probe it"); res.Exit != turn.ExitCompleted {
				t.Fatalf("exit %s: %s", res.Exit, res.Explanation)
			}
			if !ran || !sawRow {
				t.Fatalf("tool ran=%v; assistant tool-call row on disk before it ran=%v", ran, sawRow)
			}
		})
	}
}

// Invalid arguments and an unknown tool each get a paired error result and
// the turn goes on to the model's answer.
func TestBadToolCallsGetErrorResults(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api})
			env.Srv.Script(
				fakellm.Calls(
					fakellm.ToolCall("read_file", `{"pth": 1}`),
					fakellm.ToolCall("no_such_tool", `{}`),
					fakellm.ToolCall("read_file", `{"path": "x.txt"`), // invalid JSON
				),
				fakellm.Text("Sorry, those calls failed; here is my answer without them."),
			)
			res := env.Run("go")
			if res.Exit != turn.ExitCompleted || res.APICalls != 2 {
				t.Fatalf("result %+v", res)
			}
			var results []store.Message
			for _, r := range env.Rows() {
				if r.Role == llm.RoleTool {
					results = append(results, r)
				}
			}
			if len(results) != 3 {
				t.Fatalf("%d tool results, want 3", len(results))
			}
			wants := []string{"path", "no_such_tool", "JSON"}
			if api == "gemini" {
				// Gemini's function call args are a JSON object on the
				// wire: text that is not JSON cannot arrive, the call comes
				// with no arguments.
				wants[2] = "path"
			}
			for i, r := range results {
				if !r.IsError || !strings.Contains(r.Text(), wants[i]) {
					t.Errorf("result %d = %q (error=%v); want an error mentioning %q", i, r.Text(), r.IsError, wants[i])
				}
			}
			env.NoViolations()
		})
	}
}

// Workspace escapes are refused as tool results; nothing outside is touched.
func TestWorkspaceEscapesRefused(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("private"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := testenv.New(t, testenv.Options{})
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(env.Workspace, "link")); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"path": outside})
	env.Srv.Script(
		fakellm.Calls(
			fakellm.ToolCall("read_file", `{"path":"../../../../etc/passwd"}`),
			fakellm.ToolCall("read_file", string(args)),
			fakellm.ToolCall("read_file", `{"path":"link/outside.txt"}`),
			fakellm.ToolCall("write_file", `{"path":"link/new.txt","content":"x"}`),
		),
		fakellm.Text("I cannot reach those."),
	)
	if res := env.Run("read things"); res.Exit != turn.ExitCompleted {
		t.Fatalf("exit %s", res.Exit)
	}
	for _, r := range env.Rows() {
		if r.Role != llm.RoleTool {
			continue
		}
		if !r.IsError || strings.Contains(r.Text(), "private") || strings.Contains(r.Text(), "root:") {
			t.Errorf("escape not refused: %q", r.Text())
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(outside), "new.txt")); err == nil {
		t.Error("write_file wrote outside the workspace")
	}
}
