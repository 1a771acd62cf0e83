package turn_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/transcript"
	"github.com/talaria-agent/talaria/turn"
)

// cancelBound is how soon a cancelled turn must have returned.
const cancelBound = time.Second

// canceller cancels a turn once and remembers when.
type canceller struct {
	cancel context.CancelFunc
	once   sync.Once
	at     atomic.Int64
}

func newCanceller(t *testing.T) (context.Context, *canceller) {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	return ctx, &canceller{cancel: cancel}
}

func (c *canceller) fire() {
	c.once.Do(func() {
		c.at.Store(time.Now().UnixNano())
		c.cancel()
	})
}

// returnedWithin fails the test unless the turn returned within d of the
// cancel.
func (c *canceller) returnedWithin(t *testing.T, d time.Duration) {
	t.Helper()
	at := c.at.Load()
	if at == 0 {
		t.Fatal("the turn was never cancelled")
	}
	if took := time.Since(time.Unix(0, at)); took > d {
		t.Errorf("the turn returned %v after the cancel; want within %v", took, d)
	}
}

// Ctrl+C while the answer streams: the turn ends at once, what the user
// was shown is kept as an interrupted assistant row, an empty one replays
// the neutral placeholder, and the next turn is accepted.
func TestInterruptWhileStreaming(t *testing.T) {
	long := strings.Repeat("The answer goes on and on. ", 40)
	cases := []struct {
		name      string
		step      fakellm.Step
		afterText bool // cancel on the first text delta; else once the request is in
	}{
		{"after some text", fakellm.Text(long).WithChunkDelay(100 * time.Millisecond), true},
		{"before any text", fakellm.Text(long).WithLatency(30 * time.Second), false},
	}
	for _, api := range testenv.APIs {
		for _, c := range cases {
			t.Run(api+"/"+c.name, func(t *testing.T) {
				env := testenv.New(t, testenv.Options{API: api})
				env.Srv.Script(c.step)
				ctx, cn := newCanceller(t)
				var mu sync.Mutex
				var shown strings.Builder
				in := agent.Input{Text: "explain everything", Hooks: turn.Hooks{TextDelta: func(s string) {
					mu.Lock()
					shown.WriteString(s)
					mu.Unlock()
					if c.afterText {
						cn.fire()
					}
				}}}
				if !c.afterText {
					go func() {
						if env.Srv.Wait(1, 10*time.Second) {
							cn.fire()
						}
					}()
				}
				res := env.RunWith(ctx, in)
				cn.returnedWithin(t, cancelBound)
				if res.Exit != turn.ExitInterrupted {
					t.Fatalf("exit %s, want interrupted (%s)", res.Exit, res.Explanation)
				}
				mu.Lock()
				saw := shown.String()
				mu.Unlock()
				if c.afterText == (saw == "") {
					t.Fatalf("text shown before the cancel: %q", saw)
				}

				rows := env.Rows()
				if got := testenv.Roles(rows); !slices.Equal(got, []string{"user", "assistant"}) {
					t.Fatalf("rows %v, want user, interrupted assistant", got)
				}
				a := rows[1]
				if a.Kind != store.RowInterrupted || a.Text() != saw {
					t.Errorf("interrupted row: kind %q text %q; want kind interrupted holding exactly what was shown (%q)", a.Kind, a.Text(), saw)
				}
				wantWire := saw
				if saw == "" {
					wantWire = transcript.InterruptedPlaceholder
					if a.APIContent != transcript.InterruptedPlaceholder {
						t.Errorf("empty interrupted row replays %q, want the placeholder", a.APIContent)
					}
				}

				msgs := env.ContinueOK("go on")
				if len(msgs) != 3 || msgs[1].Role != "assistant" || msgs[1].Text != wantWire {
					t.Fatalf("next request = %+v; want the interrupted answer replayed as %q", msgs, wantWire)
				}
			})
		}
	}
}

// Ctrl+C while the retry loop waits out a Retry-After: the wait ends at
// once; the lone user message merges with the next one on the wire.
func TestInterruptDuringBackoff(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api, Configure: func(c *agent.Config) {
				c.Limits.Backoff = failover.Backoff{Base: time.Millisecond, Max: 5 * time.Millisecond, RetryAfterCap: time.Minute}
			}})
			env.Srv.Script(fakellm.HTTPError(429, "rate_limit_error", "Rate limit reached; slow down.").WithHeader("Retry-After", "30"))
			ctx, cn := newCanceller(t)
			var waited atomic.Bool
			in := agent.Input{Text: "first question", Hooks: turn.Hooks{Status: func(line string) {
				if strings.Contains(line, "retrying in") {
					waited.Store(true)
					cn.fire()
				}
			}}}
			res := env.RunWith(ctx, in)
			if !waited.Load() {
				t.Fatalf("the turn never backed off: exit %s (%s)", res.Exit, res.Explanation)
			}
			cn.returnedWithin(t, cancelBound)
			if res.Exit != turn.ExitInterrupted || res.APICalls != 1 {
				t.Fatalf("exit %s after %d calls; want interrupted after 1", res.Exit, res.APICalls)
			}
			if got := testenv.Roles(env.Rows()); !slices.Equal(got, []string{"user"}) {
				t.Fatalf("rows %v, want the user's message only", got)
			}
			msgs := env.ContinueOK("second question")
			if len(msgs) != 1 || !strings.Contains(msgs[0].Text, "first question") || !strings.Contains(msgs[0].Text, "second question") {
				t.Fatalf("next request = %+v; want both questions in one user message", msgs)
			}
		})
	}
}

// Invariant 2 under failure: when the assistant's tool-call row cannot be
// written, no tool runs, and the result names the real cause.
func TestToolCallWriteFailureRunsNoTool(t *testing.T) {
	cases := []struct {
		kind   store.ErrorKind
		says   string
		noDisk bool
	}{
		{store.KindDiskFull, "disk holding the database /data/talaria/state.db is full", false},
		{store.KindLocked, "database /data/talaria/state.db is locked by another process", true},
		{store.KindLeaseLost, "another process took over", true},
		{store.KindReadOnly, "read-only", true},
	}
	for _, c := range cases {
		t.Run(string(c.kind), func(t *testing.T) {
			var fs *testenv.FaultStore
			var ran atomic.Int32
			probe := testenv.MustFunc(tool.Info{Name: "probe", Description: "changes the world", Parameters: testenv.ObjectSchema(`{}`)},
				func(context.Context, json.RawMessage) (tool.Result, error) {
					ran.Add(1)
					return tool.Result{Content: "side effect done"}, nil
				})
			env := testenv.New(t, testenv.Options{ExtraTools: []tool.Tool{probe}, Configure: func(cfg *agent.Config) {
				fs = testenv.NewFaultStore(cfg.Store)
				cfg.Store = fs
			}})
			fs.FailAppends(func(msgs []*store.Message) error {
				if testenv.HasToolCalls(msgs) {
					return testenv.StoreError(c.kind)
				}
				return nil
			})
			env.Srv.Script(fakellm.Calls(fakellm.ToolCall("probe", `{}`)), fakellm.Text("should never be asked"))
			res := env.Run("do the thing")
			if n := ran.Load(); n != 0 {
				t.Fatalf("the tool ran %d times although its call was never saved", n)
			}
			if res.Exit != turn.ExitPersistenceFailed || res.Failure == nil {
				t.Fatalf("exit %s, failure %+v; want persistence_failed", res.Exit, res.Failure)
			}
			if want := "persistence:" + string(c.kind); res.Failure.Reason() != want {
				t.Errorf("reason %q, want %q", res.Failure.Reason(), want)
			}
			if !strings.Contains(res.Failure.Message, c.says) {
				t.Errorf("message %q does not say %q", res.Failure.Message, c.says)
			}
			if c.noDisk && strings.Contains(strings.ToLower(res.Failure.Message), "disk") {
				t.Errorf("message %q blames the disk for a %s failure", res.Failure.Message, c.kind)
			}
			if n := len(env.Srv.Requests()); n != 1 {
				t.Errorf("%d API calls, want 1 (the turn must stop at the failed write)", n)
			}
			if got := testenv.Roles(env.Rows()); !slices.Equal(got, []string{"user"}) {
				t.Errorf("rows %v, want the user's message only", got)
			}
			fs.FailAppends(nil)
			env.ContinueOK("try again")
			if n := ran.Load(); n != 0 {
				t.Errorf("the unsaved call ran later (%d times)", n)
			}
		})
	}
}

// Invariant 4 under failure: a final answer whose early flush fails is
// retried by the finalizer; if it can never be written the turn says so
// and still returns the answer — it is never dropped silently.
func TestFinalAnswerFlushFailure(t *testing.T) {
	const answer = "The answer is 42."
	cases := []struct {
		name  string
		fails int // failed attempts to write the answer; -1 always
	}{
		{"retried once", 1},
		{"never written", -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var fs *testenv.FaultStore
			env := testenv.New(t, testenv.Options{Configure: func(cfg *agent.Config) {
				fs = testenv.NewFaultStore(cfg.Store)
				cfg.Store = fs
			}})
			var failed atomic.Int32
			fs.FailAppends(func(msgs []*store.Message) error {
				if testenv.IsFinalAnswer(msgs) && (c.fails < 0 || failed.Load() < int32(c.fails)) {
					failed.Add(1)
					return testenv.StoreError(store.KindLocked)
				}
				return nil
			})
			env.Srv.Script(fakellm.Text(answer))
			res := env.Run("question")
			if failed.Load() == 0 {
				t.Fatal("the answer's flush was never attempted")
			}
			if res.FinalText != answer {
				t.Errorf("final text %q, want the answer in the result either way", res.FinalText)
			}
			var answers int
			for _, r := range env.Rows() {
				if r.Role == llm.RoleAssistant && r.Text() == answer {
					answers++
				}
			}
			if c.fails < 0 {
				if res.Exit != turn.ExitPersistenceFailed || res.Failure == nil || res.Failure.Reason() != "persistence:locked" {
					t.Fatalf("exit %s failure %+v; want persistence_failed, locked", res.Exit, res.Failure)
				}
				if !strings.Contains(res.Explanation, "final answer") {
					t.Errorf("explanation %q does not say the final answer was not saved", res.Explanation)
				}
				if answers != 0 {
					t.Errorf("%d answer rows despite every write failing", answers)
				}
				return
			}
			if res.Exit != turn.ExitCompleted {
				t.Fatalf("exit %s (%s), want completed after the finalizer's retry", res.Exit, res.Explanation)
			}
			if answers != 1 {
				t.Fatalf("%d answer rows, want exactly 1", answers)
			}
			env.ContinueOK("thanks")
		})
	}
}
