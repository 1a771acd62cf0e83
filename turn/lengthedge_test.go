package turn_test

import (
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// An answer the output limit cut before any of it arrived has nothing to
// continue from: the next request says the answer was too large and asks
// for smaller pieces; a cut with text asks to continue where it stopped.
func TestLengthContinuationAfterEmptyStub(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api})
			env.Srv.Script(fakellm.Truncated(""), fakellm.Truncated("Part one of the answer."), fakellm.Text("Part two."))
			res := env.Run("write the whole report")
			if res.Exit != turn.ExitCompleted || res.APICalls != 3 {
				t.Fatalf("exit %s after %d calls (%s)", res.Exit, res.APICalls, res.Explanation)
			}
			reqs := env.Srv.Requests()
			if got := lastUser(reqs[1]); got != turn.LengthTooLargeNudge {
				t.Errorf("after the empty stub the request asks %q; want the too-large note", got)
			}
			if got := lastUser(reqs[2]); got != turn.LengthContinueNudge {
				t.Errorf("after a cut with text the request asks %q; want the continue note", got)
			}
			for _, r := range env.Rows() {
				if r.Kind == store.RowNudge {
					t.Errorf("nudge left in the transcript: %q", r.Text())
				}
			}
			env.NoViolations()
		})
	}
}
