package turn_test

import (
	"math"
	"slices"
	"testing"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm/anthropic"
)

// A route on Anthropic's 1-hour cache tier sends every breakpoint with ttl
// "1h" on every call of the turn (the strict server accepts them), and the
// turn's cost prices the 1-hour writes at 2× input, not the 5-minute rate
// (issue 29 item 8).
func TestOneHourCacheTierTurn(t *testing.T) {
	env := testenv.New(t, testenv.Options{API: "anthropic", Model: "claude-sonnet-4-5", CacheTTL: anthropic.TTL1h, Configure: func(c *agent.Config) {
		c.PromptCache = true
	}})
	env.Srv.Script(
		fakellm.Step{Calls: []fakellm.Call{fakellm.ToolCall("list_dir", `{"path":"."}`)},
			Usage: &fakellm.Usage{Input: 1000, Output: 100, CacheWrite: 10000, CacheWrite1h: 10000}},
		fakellm.Step{Text: "done", Usage: &fakellm.Usage{Input: 1000, Output: 100, CacheRead: 10000}},
	)
	res := env.Run("look")
	if res.FinalText != "done" {
		t.Fatalf("exit %s: %s", res.Exit, res.Explanation)
	}
	env.NoViolations()
	for i, r := range env.Srv.Requests() {
		if len(r.CacheTTLs) == 0 || slices.ContainsFunc(r.CacheTTLs, func(s string) bool { return s != "1h" }) {
			t.Errorf("request %d: cache marks %v, want all 1h", i, r.CacheTTLs)
		}
	}
	// claude-sonnet-4-5: $3 input, $15 output, $0.30 cache read; 1h
	// writes $6 (2× input), where the 5-minute rate would be $3.75.
	want := (2*1000*3 + 2*100*15 + 10000*6 + 10000*0.3) / 1e6
	if math.Abs(res.CostUSD-want) > 1e-9 {
		t.Errorf("cost $%.6f, want $%.6f (1-hour writes at 2× input)", res.CostUSD, want)
	}
}
