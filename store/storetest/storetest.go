// Package storetest is the contract every store.Store backend must pass.
// A backend's own tests call Run with a constructor of fresh, empty stores:
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t) })
//	}
//
// RunShared adds the rules for several processes on one database (two
// stores opened separately on the same fresh database).
package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// Run runs the Store contract against stores made by newStore (a fresh,
// empty store per call). newStore should arrange for the store to be closed
// with t.Cleanup; Close must therefore tolerate a second call.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	groups := []struct {
		name  string
		cases []testCase
	}{
		{"Sessions", sessionCases},
		{"Messages", messageCases},
		{"Search", searchCases},
		{"Leases", leaseCases},
		{"Fencing", fenceCases},
		{"Folded", foldCases},
		{"Cooldowns", cooldownCases},
		{"TurnEvents", eventCases},
		{"Concurrency", concurrencyCases},
		{"Lifecycle", lifecycleCases},
		{"Tokens", tokenCases},
		{"Queue", queueCases},
		{"Principals", principalCases},
		{"Memory", memoryCases},
		{"Spend", spendCases},
		{"Prompt", promptCases},
		{"ToolLedger", ledgerCases},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) {
					c.run(t, newStore(t))
				})
			}
		})
	}
}

// testCase is one contract rule.
type testCase struct {
	name string
	run  func(t *testing.T, s store.Store)
}

// base is a fixed, nanosecond-precise instant in the past, so explicit
// times sort before anything a store stamps with "now".
var base = time.Date(2021, 3, 14, 15, 9, 26, 535897932, time.UTC)

// at returns base plus n seconds.
func at(n int) time.Time { return base.Add(time.Duration(n) * time.Second) }

func newSession(t *testing.T, s store.Store, mods ...func(*store.Session)) *store.Session {
	t.Helper()
	sess := &store.Session{Title: "test", Provider: "openai", Model: "gpt-test"}
	for _, m := range mods {
		m(sess)
	}
	if err := s.CreateSession(t.Context(), sess); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	return sess
}

func acquire(t *testing.T, s store.Store, sessionID, holder string) store.Lease {
	t.Helper()
	l, err := s.AcquireLease(t.Context(), sessionID, holder, time.Minute)
	if err != nil {
		t.Fatalf("AcquireLease(%s, %s): %v", sessionID, holder, err)
	}
	return l
}

func text(role llm.Role, s string) *store.Message {
	return &store.Message{Message: llm.NewText(role, s)}
}

func appendMsgs(t *testing.T, s store.Store, f store.Fence, msgs ...*store.Message) {
	t.Helper()
	if err := s.Append(t.Context(), f, msgs...); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

func load(t *testing.T, s store.Store, id string, q store.MessageQuery) []store.Message {
	t.Helper()
	got, err := s.Messages(t.Context(), id, q)
	if err != nil {
		t.Fatalf("Messages(%s): %v", id, err)
	}
	return got
}

func getSession(t *testing.T, s store.Store, id string) *store.Session {
	t.Helper()
	got, err := s.GetSession(t.Context(), id)
	if err != nil {
		t.Fatalf("GetSession(%s): %v", id, err)
	}
	return got
}

// seqs lists the Seq of each row.
func seqs(ms []store.Message) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.Seq
	}
	return out
}

func texts(ms []store.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Text()
	}
	return out
}

// wantKind checks that err wraps sentinel (when not nil) and carries kind.
func wantKind(t *testing.T, what string, err error, sentinel error, kind store.ErrorKind) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: got nil error, want %s", what, kind)
	}
	if sentinel != nil && !errors.Is(err, sentinel) {
		t.Fatalf("%s: error %q does not wrap %v", what, err, sentinel)
	}
	if got := store.KindOf(err); got != kind {
		t.Fatalf("%s: KindOf(%q) = %s, want %s", what, err, got, kind)
	}
}

// sameMessage compares every field; times by instant, not location.
func sameMessage(want, got store.Message) error {
	if !want.CreatedAt.Equal(got.CreatedAt) {
		return fmt.Errorf("CreatedAt: got %v, want %v", got.CreatedAt, want.CreatedAt)
	}
	want.CreatedAt, got.CreatedAt = time.Time{}, time.Time{}
	if !reflect.DeepEqual(want, got) {
		return fmt.Errorf("message differs:\n got  %#v\n want %#v", got, want)
	}
	return nil
}

// sameSession compares every field; times by instant, not location.
func sameSession(want, got store.Session) error {
	for _, p := range []struct {
		name string
		w, g time.Time
	}{{"StartedAt", want.StartedAt, got.StartedAt}, {"UpdatedAt", want.UpdatedAt, got.UpdatedAt}, {"EndedAt", want.EndedAt, got.EndedAt}} {
		if !p.w.Equal(p.g) {
			return fmt.Errorf("%s: got %v, want %v", p.name, p.g, p.w)
		}
	}
	want.StartedAt, want.UpdatedAt, want.EndedAt = time.Time{}, time.Time{}, time.Time{}
	got.StartedAt, got.UpdatedAt, got.EndedAt = time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(want, got) {
		return fmt.Errorf("session differs:\n got  %#v\n want %#v", got, want)
	}
	return nil
}

// ctx is a shorthand used by the cases that need a plain context.
func ctx(t *testing.T) context.Context { return t.Context() }
