package gateway

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/catalogue"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
)

// pricedModel prices the test model at $1 per thousand input tokens, so
// Usage.Input/1000 is a call's cost in USD.
func pricedModel(c *agent.Config) {
	c.Catalogue = catalogue.New(map[string]catalogue.Model{
		c.Routes[0].Model: {Window: 200_000, MaxOutput: 1024, InputPerMTok: 1000},
	})
}

func spentBy(g *Gateway, principal string) float64 {
	g.use.mu.Lock()
	defer g.use.mu.Unlock()
	return g.use.get(principal).spent
}

// priced answers text with a usage of usd dollars at pricedModel's price.
func priced(text string, usd float64) fakellm.Step {
	st := fakellm.Text(text)
	st.Usage = &fakellm.Usage{Input: int64(usd * 1000), Output: 1}
	return st
}

// reviewHarness is a gateway whose agent reviews each session 10 ms after
// a turn; reviews are sent to the returned channel when they finish.
func reviewHarness(t *testing.T, limitUSD float64) (*harness, chan agent.ReviewEvent) {
	done := make(chan agent.ReviewEvent, 4)
	h := newHarness(t, harnessOptions{
		configure: func(c *Config) { c.Limits.Default.SpendUSDPerDay = limitUSD },
		envOpts: testenv.Options{Configure: func(c *agent.Config) {
			pricedModel(c)
			c.Review = agent.ReviewConfig{Enabled: true, Idle: 10 * time.Millisecond, OnEvent: func(ev agent.ReviewEvent) {
				if ev.Phase == agent.ReviewFinished {
					done <- ev
				}
			}}
		}}})
	return h, done
}

// A background review's calls are charged to the reviewed session's
// principal, like its turns'.
func TestReviewSpendIsBooked(t *testing.T) {
	h, done := reviewHarness(t, 0)
	h.env.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
		if strings.Contains(lastUserText(r), "Background review") {
			return priced("added 0 entries", 3)
		}
		return priced("hello", 6)
	})
	sid := h.session(h.token)
	s := h.open(h.token, sid, 0)
	s.until(t, 20*time.Second, finished(h.send(h.token, sid, "hi")))
	var ev agent.ReviewEvent
	select {
	case ev = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the review never finished")
	}
	if ev.APICalls != 1 || ev.CostUSD < 2.99 {
		t.Fatalf("review: %d calls, $%.4f", ev.APICalls, ev.CostUSD)
	}
	if got := spentBy(h.g, "alice"); got < 8.99 || got > 9.01 {
		t.Fatalf("alice spent $%.4f, want $9 (turn $6 + review $3)", got)
	}
}

// A background review is refused like a turn once its principal's
// spending limit is reached: its call is never made.
func TestReviewStopsAtSpendLimit(t *testing.T) {
	h, done := reviewHarness(t, 10)
	h.env.Srv.SetDefault(func(r fakellm.Request) fakellm.Step { return priced("hello", 10) })
	sid := h.session(h.token)
	s := h.open(h.token, sid, 0)
	s.until(t, 20*time.Second, finished(h.send(h.token, sid, "hi")))
	var ev agent.ReviewEvent
	select {
	case ev = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the review never finished")
	}
	if ev.Exit != "spend_limit" || ev.APICalls != 0 {
		t.Fatalf("review exit %q after %d calls, want spend_limit before any", ev.Exit, ev.APICalls)
	}
	if n := len(h.env.Srv.Requests()); n != 1 {
		t.Fatalf("the model got %d calls, want 1 (the turn's)", n)
	}
}

// A subagent draws from its delegating principal's day spend: once the
// parent's call reached the limit, the child's call is never made and the
// child ends with spend_limit.
func TestSubagentStopsAtSpendLimit(t *testing.T) {
	h := newHarness(t, harnessOptions{
		configure: func(c *Config) { c.Limits.Default.SpendUSDPerDay = 10 },
		envOpts: testenv.Options{Configure: func(c *agent.Config) {
			pricedModel(c)
			c.Subagents.Enabled = true
		}}})
	h.env.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
		if strings.Contains(r.System, "You are a subagent") {
			return priced("child done", 1)
		}
		st := fakellm.Calls(fakellm.ToolCall(agent.DelegateToolName, `{"task":"say hello"}`))
		st.Usage = &fakellm.Usage{Input: 10_000, Output: 1}
		return st
	})
	sid := h.session(h.token)
	s := h.open(h.token, sid, 0)
	evs := s.until(t, 20*time.Second, finished(h.send(h.token, sid, "delegate")))
	var exit any
	for _, e := range evs {
		if e.Type == "subagent_finished" {
			sub, _ := e.Data["subagent"].(map[string]any)
			exit = sub["exit"]
		}
	}
	if exit != "spend_limit" {
		t.Fatalf("subagent exit %v, want spend_limit; events %s", exit, types(evs))
	}
	if n := len(h.env.Srv.Requests()); n != 1 {
		t.Fatalf("the model got %d calls, want 1 (the parent's first)", n)
	}
}

// A subagent may not run on a model outside its principal's allow-list:
// the delegate call is refused before the child exists, and the model it
// named is never called.
func TestSubagentModelAllowList(t *testing.T) {
	h := newHarness(t, harnessOptions{envOpts: testenv.Options{Configure: func(c *agent.Config) { c.Subagents.Enabled = true }}})
	var mu sync.Mutex
	var toolResult string
	h.env.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
		last := r.Messages[len(r.Messages)-1]
		if last.Role == "user" {
			return fakellm.Calls(fakellm.ToolCall(agent.DelegateToolName, `{"task":"say hello","model":"o1-pro"}`))
		}
		mu.Lock()
		toolResult = last.Text
		mu.Unlock()
		return fakellm.Text("done")
	})
	sid := h.session(h.token)
	s := h.open(h.token, sid, 0)
	s.until(t, 20*time.Second, finished(h.send(h.token, sid, "delegate")))
	for _, r := range h.env.Srv.Requests() {
		if r.Model == "o1-pro" {
			t.Fatalf("the subagent's model was called")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(toolResult, "not allowed") {
		t.Fatalf("delegate result %q does not say the model is not allowed", toolResult)
	}
}

func lastUserText(r fakellm.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text
		}
	}
	return ""
}
