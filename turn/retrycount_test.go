package turn_test

import (
	"context"
	"testing"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/turn"
)

// The retry counter's "of N" is the turn's retry budget whatever the
// failure: a refused connection (retried once) must not read "(retry 1 of
// 1)" where the next failure of another kind reads "(retry 2 of 3)"
// (issue 25 minor).
func TestRetryCounterSaysTheTurnsBudget(t *testing.T) {
	env := testenv.New(t, testenv.Options{API: "openai", Configure: func(c *agent.Config) {
		c.Limits.MaxRetries = 3
		deadRoute(t, &c.Routes[0], "openai")
	}})
	rec := newRecorder(env.Srv)
	rec.run(context.Background(), env, "hi")
	var retries int
	for _, r := range rec.updates {
		if u, ok := r.u.(turn.CallFailed); ok && u.Decision == turn.DecisionRetry {
			retries++
			if u.MaxRetries != 3 {
				t.Errorf("%+v: the counter does not say the turn's budget of 3", u)
			}
		}
	}
	wantUpdate(t, rec, func(u turn.CallFailed) bool { return u.Decision == turn.DecisionRetry && u.Retry == 1 })
	if retries == 0 {
		t.Error("no retry was reported")
	}
}
