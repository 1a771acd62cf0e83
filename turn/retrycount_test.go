package turn_test

import (
	"context"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/testenv"
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
	for _, l := range rec.lines() {
		if strings.Contains(l, "(retry ") && !strings.Contains(l, " of 3)") {
			t.Errorf("status %q: the counter does not say the turn's budget of 3", l)
		}
	}
	rec.wantStatus(t, "(retry 1 of 3)")
}
