package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/tool"
)

// max_iterations bounds a turn with its subagents together: with 6, a
// parent that delegates twice while every model keeps calling tools makes
// at most 6 calls with tools offered in the whole tree, plus one tool-less
// grace call per turn (the parent's and each child's) to sum up. The
// children get what is left, and the parent is told in the tool result.
func TestIterationBudgetIsSharedWithSubagents(t *testing.T) {
	for _, api := range []string{"openai", "anthropic"} {
		t.Run(api, func(t *testing.T) {
			probe := testenv.MustFunc(tool.Info{Name: "probe", Description: "probe", Parameters: testenv.ObjectSchema(`{}`), ReadOnly: true},
				func(context.Context, json.RawMessage) (tool.Result, error) {
					return tool.Result{Content: "probed"}, nil
				})
			env := testenv.New(t, testenv.Options{API: api, Model: pricedModel, NoBuiltins: true, ExtraTools: []tool.Tool{probe},
				Configure: func(c *agent.Config) {
					c.Subagents.Enabled = true
					c.Limits.MaxIterations = 6
				}})
			env.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
				switch {
				case len(r.Tools) == 0:
					return fakellm.Text("summing up") // a grace call
				case !isChild(r) && len(r.Messages) == 1:
					return fakellm.Calls(delegateCall("probe the north side"), delegateCall("probe the south side"))
				}
				return fakellm.Calls(fakellm.ToolCall("probe", `{}`)) // never done
			})
			res := env.Run("probe everything")
			if res.Exit == "" {
				t.Fatalf("turn: %+v", res)
			}
			env.NoViolations()
			reqs := env.Srv.Requests()
			withTools, grace := 0, 0
			for _, r := range reqs {
				if len(r.Tools) > 0 {
					withTools++
				} else {
					grace++
				}
			}
			if withTools > 6 || grace > 3 {
				t.Fatalf("%d calls with tools and %d grace calls in the turn's tree, want at most 6 and 3 (1 per turn)", withTools, grace)
			}
			if n := len(children(t, env, env.Session.ID)); n != 2 {
				t.Fatalf("%d children, want 2", n)
			}
			// The parent was told each child got less than its own limit.
			var told int
			for _, row := range env.Rows() {
				if row.Role == llm.RoleTool && strings.Contains(row.Text(), "[iteration budget: the subagent got") {
					told++
				}
			}
			if told != 2 {
				t.Fatalf("%d delegate results say the budget was cut, want 2", told)
			}
		})
	}
}
