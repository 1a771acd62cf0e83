package turn_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// A late overflow whose body claims a token count far above the request's
// own size (131,072 tokens for a ~2k-token request) is answered by
// compression and the turn goes on: the claim is not believed, where it
// used to scale every kept message up until even the protected ones "did
// not fit" and the turn ended at once. The window is a local model's 32k,
// under the claim: believed, the claim made even the emergency pass's
// result look larger than the window.
func TestImplausibleOverflowCountStillCompresses(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api, NoBuiltins: true,
				ExtraTools: []tool.Tool{sizedFetch(func(int) int { return 2000 })},
				Configure:  testenv.WithContext(testenv.ContextOptions{Window: 32_000})})
			var overflowed atomic.Bool
			env.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
				if r.Model == testenv.SummaryModel {
					return fakellm.Text("## Task\nfetch three records\n## State\nrecord 1 fetched")
				}
				text := requestText(r.Messages)
				if strings.Contains(text, "RESULT-1") && overflowed.CompareAndSwap(false, true) {
					return overflowError(api, 131_072, 128_000)
				}
				if strings.Contains(text, "RESULT-3") {
					return fakellm.Text("done 3")
				}
				return fakellm.Calls(fakellm.ToolCall("fetch", fmt.Sprintf(`{"n":%d}`, strings.Count(text, "RESULT-")+1)))
			})
			res := env.Run("step 1: fetch records 1 to 3")
			if res.Exit != turn.ExitCompleted || res.FinalText != "done 3" {
				t.Fatalf("exit %s, text %q, failure %+v", res.Exit, res.FinalText, res.Failure)
			}
			if !overflowed.Load() || res.Compactions != 1 {
				t.Fatalf("overflow sent %v, %d compactions; want one overflow answered by one compaction", overflowed.Load(), res.Compactions)
			}
			env.NoViolations()
		})
	}
}

// The empty-answer streak starts over after a compaction: the compressed
// request is a new one, so empties before it do not count against it.
func TestEmptyStreakResetsAfterCompaction(t *testing.T) {
	env := testenv.New(t, testenv.Options{NoBuiltins: true,
		ExtraTools: []tool.Tool{testenv.FetchTool(fetchSize)},
		Configure:  testenv.WithContext(testenv.ContextOptions{Window: 100_000})})
	var summaries atomic.Int32
	env.Srv.SetDefault(stepModel("openai", 0, &summaries))
	steps(t, env, 1, 6)
	env.Srv.Reset()

	empty := fakellm.Step{Finish: "stop", NoUsage: true}
	env.Srv.ScriptModel("test-model", empty, empty, empty, overflowError("openai", 5000, 4096), empty, empty, empty)
	res := env.Run("step 7")
	if res.Exit != turn.ExitCompleted || res.FinalText != "done 7" || res.Compactions != 1 {
		t.Fatalf("exit %s, text %q, %d compactions, failure %+v; want the turn to go on after the compaction",
			res.Exit, res.FinalText, res.Compactions, res.Failure)
	}
	env.NoViolations()
}
