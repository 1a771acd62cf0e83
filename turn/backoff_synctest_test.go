package turn_test

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/llmtest"
	"github.com/talaria-agent/talaria/store/sqlite"
	"github.com/talaria-agent/talaria/turn"
)

// rateLimited is a 429 whose Retry-After asks for secs seconds.
func rateLimited(secs string) llmtest.Step {
	h := http.Header{}
	h.Set("Retry-After", secs)
	return llmtest.Step{Err: &llm.APIError{StatusCode: 429, Header: h, Body: []byte(openAIRateLimitBody)}}
}

// syncAgent builds an agent on a fresh SQLite store inside the caller's
// synctest bubble, closed when the bubble's test ends.
func syncAgent(t *testing.T, p llm.Provider) (*agent.Agent, string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "state.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ag, err := agent.New(agent.Config{
		Store:     st,
		Workspace: dir,
		Config:    turn.Config{Routes: []turn.Route{{Provider: p, Model: "scripted"}}, Limits: turn.Limits{Backoff: failover.Backoff{Base: time.Millisecond, Max: 5 * time.Millisecond, RetryAfterCap: time.Minute}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := ag.NewSession(ctx, agent.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ag, sess.ID
}

// The retry loop waits out a 30 s Retry-After: on synctest's fake clock the
// turn takes the whole 30 s (not less: the hint is honoured; not much more)
// and no real time.
func TestRetryAfterWaitedOnFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := llmtest.New(rateLimited("30"), llmtest.Text("Done after waiting."))
		ag, id := syncAgent(t, p)
		var waits []time.Duration
		start := time.Now()
		res, err := ag.RunTurn(t.Context(), id, agent.Input{Text: "hi", Hooks: turn.Hooks{Sink: func(u turn.Update) {
			if f, ok := u.(turn.CallFailed); ok {
				waits = append(waits, f.Wait)
			}
		}}})
		elapsed := time.Since(start)
		if err != nil || res.Exit != turn.ExitCompleted || res.APICalls != 2 {
			t.Fatalf("exit %s, %d calls, %v: %s", res.Exit, res.APICalls, err, res.Explanation)
		}
		if len(waits) != 1 || waits[0] != 30*time.Second {
			t.Errorf("announced waits %v, want [30s]", waits)
		}
		if elapsed < 30*time.Second || elapsed > 31*time.Second {
			t.Errorf("turn took %v on the fake clock, want 30s", elapsed)
		}
	})
}

// Cancelling during a 30 s wait ends the turn at the cancel, interrupted,
// and the session stays usable.
func TestCancelDuringBackoffOnFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := llmtest.New(rateLimited("30"))
		ag, id := syncAgent(t, p)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		time.AfterFunc(5*time.Second, cancel)
		start := time.Now()
		res, _ := ag.RunTurn(ctx, id, agent.Input{Text: "hi"})
		if res.Exit != turn.ExitInterrupted {
			t.Fatalf("exit %s, want interrupted: %s", res.Exit, res.Explanation)
		}
		if d := time.Since(start); d < 5*time.Second || d > 6*time.Second {
			t.Errorf("returned after %v on the fake clock, want at the cancel (5s)", d)
		}
		if n := len(p.Requests()); n != 1 {
			t.Errorf("%d calls, want 1", n)
		}
		// The session stays usable.
		p.Script(llmtest.Text("Resumed."))
		if res, err := ag.RunTurn(t.Context(), id, agent.Input{Text: "go on"}); err != nil || res.Exit != turn.ExitCompleted {
			t.Fatalf("next turn: exit %s, %v: %s", res.Exit, err, res.Explanation)
		}
	})
}
