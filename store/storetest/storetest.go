// Package storetest is the contract of the store interfaces, one suite
// per consumer-side interface, each taking a constructor of fresh, empty
// stores of just the interface it checks:
//
//   - RunCore: store.SessionService (sessions, messages, leases, fencing,
//     the folded writes, the prompt stamp), what the agent and the engine
//     need to run turns;
//   - RunSearch, RunTurnEvents, RunLedger: search, the recorded turn
//     events and the tool-call ledger, each with the session service;
//   - RunMemory, RunCooldowns, RunSpend: workspace memory, credential
//     cooldowns, the daily spend ledger, on their own;
//   - RunGateway: tokens, the durable queue and per-principal listings;
//   - RunLifecycle: Close.
//
// Run runs all of them, for a backend of the whole store.Store (the SQL
// backends):
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t) })
//	}
//
// A backend of less runs the suites of what it provides:
//
//	func TestCore(t *testing.T) {
//		storetest.RunCore(t, func(t *testing.T) store.SessionService { return memstore.New() })
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

	"github.com/talaria-agent/talaria/internal/slicesx"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// The interfaces the suites check beyond a single store interface: each is
// the session service (to make sessions and write rows) with one more.
type (
	// SearchStore is what RunSearch checks.
	SearchStore interface {
		store.SessionService
		store.Searcher
	}
	// EventStore is what RunTurnEvents checks.
	EventStore interface {
		store.SessionService
		store.TurnEvents
	}
	// LedgerStore is what RunLedger checks.
	LedgerStore interface {
		store.SessionService
		store.ToolLedger
	}
	// GatewayStore is what RunGateway checks: the gateway's own tables
	// (tokens, queue) and its per-principal listings and search.
	GatewayStore interface {
		store.SessionService
		store.Searcher
		store.Tokens
		store.Queue
	}
	// Closable is what RunLifecycle checks.
	Closable interface {
		store.SessionService
		Close() error
	}
)

// Run runs every suite against stores made by newStore (a fresh, empty
// store per call), the core suite as subtest "Core". newStore should
// arrange for the store to be closed with t.Cleanup; Close must therefore
// tolerate a second call. The spend and tool-call ledgers are not part of
// store.Store, but every backend of it in this module must have them: a
// store without one fails.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Run("Core", func(t *testing.T) { RunCore(t, as[store.SessionService](newStore)) })
	RunSearch(t, as[SearchStore](newStore))
	RunCooldowns(t, as[store.Cooldowns](newStore))
	RunTurnEvents(t, as[EventStore](newStore))
	RunLifecycle(t, as[Closable](newStore))
	RunGateway(t, as[GatewayStore](newStore))
	RunMemory(t, as[store.Memories](newStore))
	RunSpend(t, required[store.SpendLedger](newStore,
		"store.SpendLedger: a daily spending limit would reset on every restart"))
	RunLedger(t, required[LedgerStore](newStore,
		"store.ToolLedger: a turn handed off after its node died could run a tool twice"))
}

// RunCore runs the contract of store.SessionService: what a backend needs
// to run turns.
func RunCore(t *testing.T, newStore func(t *testing.T) store.SessionService) {
	runGroups(t, newStore,
		group[store.SessionService]{"Sessions", sessionCases},
		group[store.SessionService]{"Messages", messageCases},
		group[store.SessionService]{"Leases", leaseCases},
		group[store.SessionService]{"Fencing", fenceCases},
		group[store.SessionService]{"Folded", foldCases},
		group[store.SessionService]{"Prompt", promptCases},
		group[store.SessionService]{"Concurrency", concurrencyCases},
	)
}

// RunSearch runs the contract of store.Searcher.
func RunSearch(t *testing.T, newStore func(t *testing.T) SearchStore) {
	runGroups(t, newStore, group[SearchStore]{"Search", searchCases})
}

// RunCooldowns runs the contract of store.Cooldowns.
func RunCooldowns(t *testing.T, newStore func(t *testing.T) store.Cooldowns) {
	runGroups(t, newStore, group[store.Cooldowns]{"Cooldowns", cooldownCases})
}

// RunTurnEvents runs the contract of store.TurnEvents.
func RunTurnEvents(t *testing.T, newStore func(t *testing.T) EventStore) {
	runGroups(t, newStore, group[EventStore]{"TurnEvents", eventCases})
}

// RunLifecycle checks that a closed store refuses work with KindClosed.
func RunLifecycle(t *testing.T, newStore func(t *testing.T) Closable) {
	runGroups(t, newStore, group[Closable]{"Lifecycle", lifecycleCases})
}

// RunGateway runs the contract of the gateway's tables: store.Tokens,
// store.Queue, and listings and search narrowed to one principal.
func RunGateway(t *testing.T, newStore func(t *testing.T) GatewayStore) {
	runGroups(t, newStore,
		group[GatewayStore]{"Tokens", tokenCases},
		group[GatewayStore]{"Queue", queueCases},
		group[GatewayStore]{"Principals", principalCases},
	)
}

// RunMemory runs the contract of store.Memories.
func RunMemory(t *testing.T, newStore func(t *testing.T) store.Memories) {
	runGroups(t, newStore, group[store.Memories]{"Memory", memoryCases})
}

// RunSpend runs the contract of store.SpendLedger.
func RunSpend(t *testing.T, newStore func(t *testing.T) store.SpendLedger) {
	runGroups(t, newStore, group[store.SpendLedger]{"Spend", spendCases})
}

// RunLedger runs the contract of store.ToolLedger.
func RunLedger(t *testing.T, newStore func(t *testing.T) LedgerStore) {
	runGroups(t, newStore, group[LedgerStore]{"ToolLedger", ledgerCases})
}

// as narrows a constructor of whole stores to one of S.
func as[S any](newStore func(t *testing.T) store.Store) func(t *testing.T) S {
	return func(t *testing.T) S { return newStore(t).(S) }
}

// required is as for what every backend of store.Store must have: a store
// without S fails, saying what (why) it lacks.
func required[S any](newStore func(t *testing.T) store.Store, why string) func(t *testing.T) S {
	return func(t *testing.T) S {
		s := newStore(t)
		l, ok := s.(S)
		if !ok {
			t.Fatalf("%T does not implement %s", s, why)
		}
		return l
	}
}

// testCase is one contract rule, checked on a store of S.
type testCase[S any] struct {
	name string
	run  func(t *testing.T, s S)
}

// group is a named list of rules, one subtest each, each on a fresh store.
type group[S any] struct {
	name  string
	cases []testCase[S]
}

func runGroups[S any](t *testing.T, newStore func(t *testing.T) S, groups ...group[S]) {
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

// pairCase is one rule checked on two stores opened on one database.
type pairCase[S any] struct {
	name string
	run  func(t *testing.T, a, b S)
}

// runPairs runs each case as a subtest on a fresh pair from newPair.
func runPairs[S any](t *testing.T, newPair func(t *testing.T) (a, b S), cases []pairCase[S]) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := newPair(t)
			c.run(t, a, b)
		})
	}
}

// base is a fixed, nanosecond-precise instant in the past, so explicit
// times sort before anything a store stamps with "now".
var base = time.Date(2021, 3, 14, 15, 9, 26, 535897932, time.UTC)

// at returns base plus n seconds.
func at(n int) time.Time { return base.Add(time.Duration(n) * time.Second) }

func newSession(t *testing.T, s store.SessionService, mods ...func(*store.Session)) *store.Session {
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

func acquire(t *testing.T, s store.SessionService, sessionID, holder string) store.Lease {
	t.Helper()
	return acquireTTL(t, s, sessionID, holder, time.Minute)
}

func acquireTTL(t *testing.T, s store.SessionService, sessionID, holder string, ttl time.Duration) store.Lease {
	t.Helper()
	l, err := s.AcquireLease(t.Context(), sessionID, holder, ttl)
	if err != nil {
		t.Fatalf("AcquireLease(%s, %s): %v", sessionID, holder, err)
	}
	return l
}

// expiredLease acquires a lease of shortTTL and waits until it has expired.
func expiredLease(t *testing.T, s store.SessionService, sessionID, holder string) store.Lease {
	t.Helper()
	l := acquireTTL(t, s, sessionID, holder, shortTTL)
	time.Sleep(expiryWait)
	return l
}

func text(role llm.Role, s string) *store.Message {
	return &store.Message{Message: llm.NewText(role, s)}
}

func appendMsgs(t *testing.T, s store.SessionService, f store.Fence, msgs ...*store.Message) {
	t.Helper()
	if err := s.Append(t.Context(), f, msgs...); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

func load(t *testing.T, s store.SessionService, id string, q store.MessageQuery) []store.Message {
	t.Helper()
	got, err := s.Messages(t.Context(), id, q)
	if err != nil {
		t.Fatalf("Messages(%s): %v", id, err)
	}
	return got
}

func getSession(t *testing.T, s store.SessionService, id string) *store.Session {
	t.Helper()
	got, err := s.GetSession(t.Context(), id)
	if err != nil {
		t.Fatalf("GetSession(%s): %v", id, err)
	}
	return got
}

// seqs lists the Seq of each row.
func seqs(ms []store.Message) []int64 {
	return slicesx.Map(ms, func(m store.Message) int64 { return m.Seq })
}

func texts(ms []store.Message) []string {
	return slicesx.Map(ms, func(m store.Message) string { return m.Text() })
}

func sessionIDs(ss []store.Session) []string {
	return slicesx.Map(ss, func(s store.Session) string { return s.ID })
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
