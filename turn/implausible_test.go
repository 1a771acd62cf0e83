package turn_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testenv"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// A late overflow whose body claims a token count far above the request's
// own size (131,072 tokens for a ~2k-token request) still gets a normal
// compression pass and an answer: the claim is not believed, where it used
// to scale every message up until even the protected ones "did not fit".
func TestImplausibleOverflowCountStillCompresses(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api, NoBuiltins: true,
				ExtraTools: []tool.Tool{testenv.FetchTool(fetchSize)},
				Configure:  testenv.WithContext(testenv.ContextOptions{Window: 100_000})})
			var summaries atomic.Int32
			env.Srv.SetDefault(stepModel(api, 0, &summaries))
			steps(t, env, 1, 6)
			env.Srv.Reset()

			env.Srv.Script(overflowError(api, 131_072, 128_000))
			res := env.Run("step 7")
			if res.Exit != turn.ExitCompleted || res.FinalText != "done 7" {
				t.Fatalf("exit %s, text %q, failure %+v", res.Exit, res.FinalText, res.Failure)
			}
			if res.Compactions != 1 {
				t.Fatalf("%d compactions, want 1", res.Compactions)
			}
			reqs := env.Srv.Requests()
			retry := reqs[len(reqs)-2]
			if !strings.Contains(requestText(retry.Messages), compact.SummaryMarker) {
				t.Errorf("the retried request carries no summary")
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
