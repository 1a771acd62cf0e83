package main

import (
	"context"
	"testing"

	"github.com/talaria-agent/talaria/turn"
)

// Only the one-session commands follow the live heap with the memory
// limit, from their first model request on; serve and the rest keep
// GOGC's pacing, and a user's GOMEMLIMIT or GOGC wins.
func TestMemoryObserver(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			if len(kv) == 2 && kv[0] == k {
				return kv[1]
			}
			return ""
		}
	}
	tests := []struct {
		args     []string
		env      func(string) string
		observes bool
		tracks   bool
	}{
		{[]string{"run", "-c", "go on"}, env(), true, true},
		{[]string{"chat"}, env(), true, true},
		{[]string{"serve"}, env(), false, false},
		{[]string{"sessions", "compact", "s1"}, env(), false, false},
		{nil, env(), false, false},
		{[]string{"run", "x"}, env("GOMEMLIMIT", "2GiB"), true, false},
		{[]string{"chat"}, env("GOGC", "200"), true, false},
	}
	for _, tt := range tests {
		obs := memoryObserverFor(tt.args, tt.env)
		if got := obs != nil; got != tt.observes {
			t.Fatalf("memoryObserverFor(%q): observer %v, want %v", tt.args, got, tt.observes)
		}
		if obs == nil {
			continue
		}
		m := obs.(*memoryObserver)
		to := obs.StartTurn(context.Background(), turn.TurnInfo{})
		to.Event(&turn.Event{Kind: turn.EventToolStart})
		if m.tracker != nil {
			t.Fatalf("%q: tracking before the first request", tt.args)
		}
		to.Event(&turn.Event{Kind: turn.EventRequest})
		to.Event(&turn.Event{Kind: turn.EventRequest})
		if got := m.tracker != nil; got != tt.tracks {
			t.Errorf("%q: tracking %v after the first request, want %v", tt.args, got, tt.tracks)
		}
		m.tracker.Stop()
	}
}
