package agent_test

import (
	"context"
	"sync"
	"testing"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/turn"
)

// kindsObserver records, per session, the kinds of observer events its
// turns saw and the child sessions they named.
type kindsObserver struct {
	mu       sync.Mutex
	started  map[string][]string // parent session → children started
	stopped  map[string][]string // parent session → "child:exit"
	sessions []string
}

type kindsTurn struct {
	o   *kindsObserver
	sid string
}

func (o *kindsObserver) StartTurn(_ context.Context, t turn.TurnInfo) turn.TurnObserver {
	o.mu.Lock()
	o.sessions = append(o.sessions, t.SessionID)
	o.mu.Unlock()
	return &kindsTurn{o: o, sid: t.SessionID}
}

func (k *kindsTurn) Event(ev *turn.Event) {
	k.o.mu.Lock()
	defer k.o.mu.Unlock()
	switch ev.Kind {
	case turn.EventSubagentStart:
		k.o.started[k.sid] = append(k.o.started[k.sid], ev.To)
	case turn.EventSubagentStop:
		k.o.stopped[k.sid] = append(k.o.stopped[k.sid], ev.To+":"+ev.Outcome)
	}
}

func (k *kindsTurn) End(*turn.Result) {}

// TestDelegateObserved: the parent turn's observer (what telemetry and
// `talaria trace` are built on) sees the delegated child start and stop,
// naming the child session and its exit; the child's own turn is observed
// too.
func TestDelegateObserved(t *testing.T) {
	obs := &kindsObserver{started: map[string][]string{}, stopped: map[string][]string{}}
	e := testenv.New(t, testenv.Options{Model: pricedModel, Configure: func(c *agent.Config) {
		c.Subagents.Enabled = true
		c.Observer = obs
	}})
	e.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
		if isChild(r) {
			return fakellm.Text("child done")
		}
		if last(r).Role == "user" {
			return fakellm.Calls(delegateCall("look around"))
		}
		return fakellm.Text("parent done")
	})
	res := e.RunWith(context.Background(), agent.Input{Text: "delegate it"})
	if res.Exit != turn.ExitCompleted {
		t.Fatalf("exit %s: %s", res.Exit, res.Explanation)
	}
	kids := children(t, e, res.SessionID)
	if len(kids) != 1 {
		t.Fatalf("children = %d", len(kids))
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if got := obs.started[res.SessionID]; len(got) != 1 || got[0] != kids[0].ID {
		t.Fatalf("subagent starts seen by the parent's observer = %v, want [%s]", got, kids[0].ID)
	}
	if got := obs.stopped[res.SessionID]; len(got) != 1 || got[0] != kids[0].ID+":completed" {
		t.Fatalf("subagent stops = %v", got)
	}
	seenChild := false
	for _, s := range obs.sessions {
		seenChild = seenChild || s == kids[0].ID
	}
	if !seenChild {
		t.Fatalf("the child's own turn was not observed (sessions %v)", obs.sessions)
	}
}
