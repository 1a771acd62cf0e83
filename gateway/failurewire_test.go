package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/gateway/client"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/turn"
)

// A failed turn's failure crosses the gateway typed: turn_finished carries
// it as an object (outcome, class, status, provider, retry_after_ms, and
// the deprecated failure_reason alias), and the Go client decodes that
// into the same turn.Failure the server's engine made, over real HTTP and
// SSE.
func TestFailureTravelsTyped(t *testing.T) {
	rateLimited := `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`
	tests := []struct {
		name      string
		step      fakellm.Step
		class     failover.Class
		status    int
		retryMS   int64
		retryable bool
	}{
		{"auth", fakellm.RawError(401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`),
			failover.ClassAuth, 401, 0, false},
		// Every retry is refused: the last answer's hint travels as
		// retry_after_ms.
		{"rate limit", fakellm.RawError(429, rateLimited, "retry-after-ms: 7"), failover.ClassRateLimit, 429, 7, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOptions{})
			steps := make([]fakellm.Step, 12)
			for i := range steps {
				steps[i] = tc.step
			}
			h.env.Srv.Script(steps...)
			sid := h.session(h.token)

			c := &client.Client{BaseURL: h.srv.URL, Token: h.token}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := c.RunTurn(ctx, sid, "hi", turn.Hooks{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			f := res.Failure
			if res.Exit != turn.ExitFailed || f == nil {
				t.Fatalf("client result: exit %s, failure %+v", res.Exit, f)
			}
			if f.Outcome != turn.ExitFailed || f.Class != tc.class || f.Status != tc.status || f.Retryable != tc.retryable ||
				f.RetryAfter != time.Duration(tc.retryMS)*time.Millisecond || f.Provider == "" || f.Model == "" {
				t.Errorf("client decoded %+v; want outcome failed, class %s, status %d, retry after %dms, retryable %v",
					f, tc.class, tc.status, tc.retryMS, tc.retryable)
			}

			// The same turn's turn_finished event, as any SSE client reads it.
			evs := h.follow(sid, 0, 10*time.Second, func(e sseEvent) bool { return e.Type == string(api.EventTurnFinished) })
			r, _ := evs[len(evs)-1].Data["result"].(map[string]any)
			w, _ := r["failure"].(map[string]any)
			if w["outcome"] != "failed" || w["class"] != string(tc.class) || w["status"] != float64(tc.status) ||
				w["failure_reason"] != string(tc.class) || w["provider"] != f.Provider {
				t.Errorf("turn_finished failure on the wire: %v", w)
			}
			if ms, _ := w["retry_after_ms"].(float64); int64(ms) != tc.retryMS {
				t.Errorf("retry_after_ms %v, want %d", w["retry_after_ms"], tc.retryMS)
			}
		})
	}
}
