package turn_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/turn"
)

// A billing failure that benches the key says for how long, and carries the
// bench typed so a front end can name the command that lifts it; the next
// turn, sent nowhere because every key is benched, says no request was sent
// and carries the same bench.
func TestBillingBenchIsTold(t *testing.T) {
	env := testenv.New(t, testenv.Options{Keys: []string{"only-key"}})
	env.Srv.Script(fakellm.RawError(429, openAIQuotaBody), fakellm.Text("never reached"))
	res := env.Run("hi")
	wantFailedTurn(t, env, res, "billing")
	b := res.Failure.Bench
	if b == nil || b.NotSent || b.Lasts() != time.Hour || time.Until(b.Until) < 59*time.Minute {
		t.Fatalf("bench = %+v; want a one-hour bench on the key that was sent", b)
	}
	if !strings.Contains(res.Failure.Message, "benched for 1h") {
		t.Errorf("message does not say how long the bench lasts: %q", res.Failure.Message)
	}
	if strings.Contains(res.Failure.Message, "talaria keys") {
		t.Errorf("the engine's message names a CLI command: %q", res.Failure.Message)
	}

	res = env.Run("again")
	if res.APICalls != 0 || len(env.Srv.Requests()) != 1 {
		t.Fatalf("a benched key was called: %d calls", res.APICalls)
	}
	wantFailedTurn(t, env, res, "billing")
	b = res.Failure.Bench
	if b == nil || !b.NotSent || b.Lasts() != time.Hour {
		t.Fatalf("bench = %+v; want the not-sent bench of an hour", b)
	}
	if !strings.HasPrefix(res.Failure.Message, "No request was sent.") {
		t.Errorf("message does not say nothing was sent: %q", res.Failure.Message)
	}
	// The bench travels typed through the gateway's JSON.
	raw, err := json.Marshal(res.Failure)
	if err != nil {
		t.Fatal(err)
	}
	var back turn.Failure
	if err := json.Unmarshal(raw, &back); err != nil || back.Bench == nil || !back.Bench.NotSent || !back.Bench.Until.Equal(b.Until) {
		t.Errorf("bench after JSON = %+v (%v) from %s", back.Bench, err, raw)
	}
}
