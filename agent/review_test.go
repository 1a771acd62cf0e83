package agent_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// events records review events and other marks in arrival order.
type events struct {
	mu       sync.Mutex
	list     []string
	ch       chan agent.ReviewEvent
	cancelAt time.Time
}

func newEvents() *events { return &events{ch: make(chan agent.ReviewEvent, 64)} }

func (ev *events) mark(s string) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.list = append(ev.list, s)
}

func (ev *events) review(e agent.ReviewEvent) {
	ev.mark("review:" + e.Phase)
	if e.Phase == agent.ReviewCancelled {
		ev.mu.Lock()
		ev.cancelAt = e.At
		ev.mu.Unlock()
	}
	ev.ch <- e
}

func cancelAt(ev *events) time.Time {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return ev.cancelAt
}

func (ev *events) snapshot() []string {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return append([]string(nil), ev.list...)
}

// waitPhase waits for the next event of phase, skipping others.
func (ev *events) waitPhase(t *testing.T, phase string) agent.ReviewEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e := <-ev.ch:
			if e.Phase == phase {
				return e
			}
		case <-timeout:
			t.Fatalf("no review event %q; saw %v", phase, ev.snapshot())
		}
	}
}

func isReview(r fakellm.Request) bool {
	return len(r.Messages) > 0 && strings.Contains(last(r).Text, "[Background review")
}

func lastUserIs(r fakellm.Request, text string) bool {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text == text
		}
	}
	return false
}

func newReviewEnv(t *testing.T, api string, ev *events) *testenv.Env {
	e := testenv.New(t, testenv.Options{API: api, Model: pricedModel, Configure: func(c *agent.Config) {
		c.Review = agent.ReviewConfig{Enabled: true, Idle: 5 * time.Millisecond, OnEvent: ev.review}
	}})
	t.Cleanup(e.Agent.Close)
	return e
}

// TestReviewWritesMemory: after a turn, once idle, the review runs on the
// session's stored prefix (the same system prompt, tools and messages its
// last request had), keeps a fact through the memory tool, writes nothing
// into the session, books its tokens on a review session apart from the
// session's own, and the fact reaches the next session's system prompt.
func TestReviewWritesMemory(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			ev := newEvents()
			e := newReviewEnv(t, api, ev)
			e.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
				switch {
				case isReview(r):
					return fakellm.Calls(fakellm.ToolCall(agent.MemoryToolName,
						`{"action":"add","text":"The user wants tabs, never spaces."}`)).WithUsage(900, 40)
				case last(r).Role == "tool":
					return fakellm.Text("added 1").WithUsage(950, 5)
				}
				return fakellm.Text("Noted: tabs.").WithUsage(300, 10)
			})
			res := e.Run("I always want tabs, never spaces.")
			if res.Exit != turn.ExitCompleted {
				t.Fatalf("exit %s", res.Exit)
			}
			rowsBefore := e.Rows()
			fin := ev.waitPhase(t, agent.ReviewFinished)
			if fin.Exit != turn.ExitCompleted || fin.Added != 1 || fin.APICalls != 2 || fin.Usage.InputTokens != 1850 {
				t.Fatalf("review finished %+v", fin)
			}
			e.NoViolations()
			reqs := e.Srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("requests = %d, want the turn's and the review's two", len(reqs))
			}
			turnReq, rev := reqs[0], reqs[1]
			// Byte-stable prefix: the review's request starts with the
			// session's request bytes up to the end of its messages.
			if rev.System != turnReq.System || fmt.Sprint(rev.Tools) != fmt.Sprint(turnReq.Tools) {
				t.Fatal("the review's system prompt or tools differ from the session's")
			}
			if n := len(turnReq.Messages); len(rev.Messages) != n+2 || fmt.Sprint(rev.Messages[:n]) != fmt.Sprint(turnReq.Messages) {
				t.Fatalf("review messages do not extend the session's:\n%v\n%v", rev.Messages, turnReq.Messages)
			}
			cut := strings.LastIndex(string(turnReq.Body), "I always want tabs")
			if cut < 0 || string(rev.Body[:cut]) != string(turnReq.Body[:cut]) {
				t.Fatal("the review's request body does not start with the session's bytes")
			}
			// Nothing written into the session.
			if got, want := testenv.Roles(e.Rows()), testenv.Roles(rowsBefore); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("session rows changed by the review: %v, were %v", got, want)
			}
			kids := children(t, e, e.Session.ID)
			if len(kids) != 1 || kids[0].Kind != store.SessionReview || kids[0].ID != fin.ReviewSessionID {
				t.Fatalf("children %+v", kids)
			}
			checkTranscript(t, "review", e.RowsOf(kids[0].ID, false))
			spend, err := agent.SpendOf(context.Background(), e.Store, e.Session.ID)
			if err != nil {
				t.Fatal(err)
			}
			if spend.Own.Usage.InputTokens != 300 || spend.Review.Usage.InputTokens != 1850 || spend.Review.APICalls != 2 {
				t.Fatalf("spend %+v", spend)
			}
			mem, err := e.Store.Memories(context.Background(), e.Agent.MemoryQuery())
			if err != nil || len(mem) != 1 || mem[0].SourceSession != e.Session.ID || !strings.Contains(mem[0].Text, "tabs") {
				t.Fatalf("memory %+v %v", mem, err)
			}
			// The next session starts with the fact in its prompt; the
			// current one's prompt did not change.
			if cur, _ := e.Store.GetSession(context.Background(), e.Session.ID); strings.Contains(cur.SystemPrompt, "never spaces") {
				t.Fatal("memory changed a running session's system prompt")
			}
			next, err := e.Agent.NewSession(context.Background(), agent.SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(next.SystemPrompt, "- The user wants tabs, never spaces.") {
				t.Fatalf("next session's prompt lacks the memory:\n%s", next.SystemPrompt)
			}
		})
	}
}

// TestReviewYieldsToForegroundTurn: a review is mid-call when the user's
// next message arrives; the review is cancelled before the foreground
// turn's first answer, which the script delays by 100 ms, arrives — so
// within 100 ms, measured by events. Both finalize; the foreground turn
// does not compress and its accounting holds only its own calls.
func TestReviewYieldsToForegroundTurn(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			ev := newEvents()
			// Compression is on with a 5000-token threshold: the session's
			// own calls stay far below it; the review's first call reports
			// 50000 prompt tokens. Counted toward the session, they would
			// compress its next turn prematurely.
			e := testenv.New(t, testenv.Options{API: api, Model: pricedModel, Configure: func(c *agent.Config) {
				c.Review = agent.ReviewConfig{Enabled: true, Idle: 5 * time.Millisecond, OnEvent: ev.review}
				c.Compressor = &compact.Compressor{Summarizer: c.Routes[0].Provider, Model: pricedModel}
				c.Threshold = compact.Threshold{Tokens: 5000}
			}})
			t.Cleanup(e.Agent.Close)
			e.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
				switch {
				case isReview(r):
					return fakellm.Calls(fakellm.ToolCall(agent.MemoryToolName, `{"action":"list"}`)).WithUsage(50000, 10)
				case len(r.Messages) > 2 && strings.Contains(r.Messages[len(r.Messages)-3].Text, "[Background review"):
					// The review's second call is long; only cancellation
					// ends it early.
					return fakellm.Text("never delivered").WithLatency(time.Minute)
				case lastUserIs(r, "second"):
					return fakellm.Text("second answer").WithUsage(400, 10).WithLatency(100 * time.Millisecond)
				}
				return fakellm.Text("first answer").WithUsage(300, 10)
			})
			if res := e.Run("first"); res.Exit != turn.ExitCompleted {
				t.Fatalf("exit %s", res.Exit)
			}
			ev.waitPhase(t, agent.ReviewStarted)
			if !e.Srv.Wait(3, 10*time.Second) {
				t.Fatal("the review's second request never arrived")
			}
			ev.mark("foreground:message")
			res := e.RunWith(context.Background(), agent.Input{Text: "second", Hooks: turn.Hooks{
				TextDelta: func(string) { ev.mark("foreground:first-delta") },
			}})
			if res.Exit != turn.ExitCompleted || res.FinalText != "second answer" {
				t.Fatalf("foreground: %s %q", res.Exit, res.FinalText)
			}
			fin := ev.waitPhase(t, agent.ReviewFinished)
			if fin.Exit != turn.ExitInterrupted {
				t.Fatalf("review exit %s, want interrupted", fin.Exit)
			}
			order := ev.snapshot()
			idx := func(s string) int {
				for i, x := range order {
					if x == s {
						return i
					}
				}
				return -1
			}
			// The cancel is fire-and-forget: it must come before the
			// foreground's answer, which the script delays by 100 ms; the
			// review then finalizes on its own (its transcript is checked
			// below), without holding up the turn.
			msg, cancelled, finished, delta := idx("foreground:message"), idx("review:cancelled"), idx("review:finished"), idx("foreground:first-delta")
			if !(msg >= 0 && msg < cancelled && cancelled < delta && finished > cancelled) {
				t.Fatalf("want message < review cancelled < foreground's first delta (100 ms late), review finished after its cancel; got %v", order)
			}
			t.Logf("review: finalized %v after its cancel", fin.At.Sub(cancelAt(ev)))
			if res.Compactions != 0 {
				t.Fatalf("foreground compressed %d times", res.Compactions)
			}
			if res.Usage.InputTokens != 400 || res.APICalls != 1 {
				t.Fatalf("foreground usage %+v in %d calls: a review's tokens leaked in", res.Usage, res.APICalls)
			}
			if n := len(e.Srv.Requests()); n != 4 {
				t.Fatalf("%d requests, want 4 (turn, two review calls, turn): a summary was requested", n)
			}
			if sp, err := agent.SpendOf(context.Background(), e.Store, e.Session.ID); err != nil ||
				sp.Own.Usage.InputTokens != 700 || sp.Review.Usage.InputTokens != 50000 {
				t.Fatalf("spend %+v %v: the review's tokens must be booked apart", sp, err)
			}
			kids := children(t, e, e.Session.ID)
			if len(kids) == 0 {
				t.Fatal("no review session")
			}
			checkTranscript(t, "review", e.RowsOf(kids[0].ID, false))
			checkTranscript(t, "session", e.Rows())
			e.Agent.Close() // the second turn's review is cancelled and joined
			e.NoViolations()
		})
	}
}

// TestInterruptReachesReview: Interrupt on a session stops its running
// review like a turn; the review finalizes and unregisters.
func TestInterruptReachesReview(t *testing.T) {
	ev := newEvents()
	e := newReviewEnv(t, "openai", ev)
	e.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
		if isReview(r) {
			return fakellm.Text("never").WithLatency(time.Minute)
		}
		return fakellm.Text("ok")
	})
	e.Run("hello")
	ev.waitPhase(t, agent.ReviewStarted)
	e.Srv.Wait(2, 10*time.Second)
	if !e.Agent.Interrupt(e.Session.ID) {
		t.Fatal("Interrupt found nothing to stop")
	}
	if fin := ev.waitPhase(t, agent.ReviewFinished); fin.Exit != turn.ExitInterrupted {
		t.Fatalf("review exit %s", fin.Exit)
	}
	e.Agent.WaitReviews()
	if e.Agent.Interrupt(e.Session.ID) {
		t.Fatal("the review stayed registered after it ended")
	}
}

// TestReviewWaitsForIdle: a review is only scheduled when a turn ends; a
// message that arrives before the session has been idle for review.idle
// cancels it before it starts, and no review request is ever made.
func TestReviewWaitsForIdle(t *testing.T) {
	ev := newEvents()
	e := testenv.New(t, testenv.Options{Configure: func(c *agent.Config) {
		c.Review = agent.ReviewConfig{Enabled: true, Idle: time.Hour, OnEvent: ev.review}
	}})
	t.Cleanup(e.Agent.Close)
	e.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
		if isReview(r) {
			t.Error("a review ran before the session was idle")
		}
		return fakellm.Text("ok")
	})
	e.Run("one")
	ev.waitPhase(t, agent.ReviewScheduled)
	e.Run("two")
	if fin := ev.waitPhase(t, agent.ReviewFinished); fin.Exit != "" || fin.ReviewSessionID != "" {
		t.Fatalf("the first review got going: %+v", fin)
	}
	e.Agent.Close()
	got := ev.snapshot()
	if len(got) < 2 || got[0] != "review:scheduled" || got[1] != "review:cancelled" || strings.Contains(fmt.Sprint(got), "review:started") {
		t.Fatalf("events %v: want scheduled, cancelled by the second message, never started", got)
	}
	if kids := children(t, e, e.Session.ID); len(kids) != 0 {
		t.Fatalf("review sessions created: %d", len(kids))
	}
}
