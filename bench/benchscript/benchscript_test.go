package benchscript_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/bench/benchscript"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/turn"
)

// The benchmark task really runs against the built-in tools: ten rounds,
// every call succeeds, the workspace ends up changed as the answer says.
// If a tool's arguments change, the benchmark would silently measure
// error results; this test fails instead.
func TestTaskRunsCleanly(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api})
			if err := benchscript.WriteTaskWorkspace(env.Workspace); err != nil {
				t.Fatal(err)
			}
			env.Srv.SetDefault(benchscript.Task)
			res := env.RunWith(t.Context(), agent.Input{Text: "do the task"})
			if res.Exit != turn.ExitCompleted || res.APICalls != benchscript.Rounds+1 || res.ToolRounds != benchscript.Rounds {
				t.Fatalf("exit %s, %d calls, %d rounds", res.Exit, res.APICalls, res.ToolRounds)
			}
			for _, r := range env.Rows() {
				if r.Role == llm.RoleTool && r.IsError {
					t.Errorf("%s failed: %s", r.ToolName, r.Text())
				}
			}
			notes, _ := os.ReadFile(filepath.Join(env.Workspace, "notes.txt"))
			low, _ := os.ReadFile(filepath.Join(env.Workspace, "low_stock.md"))
			if !strings.HasPrefix(string(notes), "DONE:") || !strings.Contains(string(low), "hinges") {
				t.Errorf("workspace not changed: notes %q, low_stock %q", notes, low)
			}
			env.NoViolations()
		})
	}
}

func TestRound(t *testing.T) {
	msgs := func(roles ...string) fakellm.Request {
		var r fakellm.Request
		for _, role := range roles {
			r.Messages = append(r.Messages, fakellm.Msg{Role: role})
		}
		return r
	}
	cases := []struct {
		name string
		req  fakellm.Request
		want int
	}{
		{"first call", msgs("user"), 0},
		{"after two rounds", msgs("user", "assistant", "tool", "assistant", "tool"), 2},
		{"a later turn counts from its own user message", msgs("user", "assistant", "tool", "assistant", "user", "assistant", "tool"), 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := benchscript.Round(tc.req); got != tc.want {
				t.Errorf("Round = %d, want %d", got, tc.want)
			}
		})
	}
}
