package storetest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/store"
)

var eventCases = []testCase[EventStore]{
	{"RoundTripInOrder", testEventsRoundTrip},
	{"FilterByTurn", testEventsByTurn},
	{"DuplicateSeqStoresNothing", testEventsDuplicate},
	{"UnknownSession", testEventsUnknownSession},
	{"EndedSessionAccepts", testEventsEndedSession},
	{"DeletedWithSession", testEventsDeleted},
}

func event(sess, turnID string, seq int, kind string) store.TurnEvent {
	return store.TurnEvent{SessionID: sess, TurnID: turnID, Seq: seq, Kind: kind, Name: "gpt-test",
		Start: at(seq), Duration: time.Duration(seq) * 1500 * time.Microsecond, CostUSD: 0.0125 * float64(seq),
		Detail: `{"input_tokens":1200,"class":"rate_limit"}`}
}

func appendEvents(t *testing.T, s EventStore, evs ...store.TurnEvent) {
	t.Helper()
	if err := s.AppendTurnEvents(t.Context(), evs...); err != nil {
		t.Fatalf("AppendTurnEvents: %v", err)
	}
}

func events(t *testing.T, s EventStore, sess, turnID string) []store.TurnEvent {
	t.Helper()
	got, err := s.TurnEvents(t.Context(), sess, turnID)
	if err != nil {
		t.Fatalf("TurnEvents(%s, %q): %v", sess, turnID, err)
	}
	return got
}

// Every field comes back as written (times to the nanosecond), in the
// order appended — which is not the order of Seq or Start across turns.
func testEventsRoundTrip(t *testing.T, s EventStore) {
	sess := newSession(t, s)
	b := event(sess.ID, "turn-b", 1, "turn")
	a1, a2 := event(sess.ID, "turn-a", 1, "turn"), event(sess.ID, "turn-a", 2, "call")
	a2.Start = at(-5)
	appendEvents(t, s, b)
	appendEvents(t, s, a1, a2)
	got := events(t, s, sess.ID, "")
	want := []store.TurnEvent{b, a1, a2}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events:\n got %+v\nwant %+v", got, want)
	}
}

func testEventsByTurn(t *testing.T, s EventStore) {
	sess := newSession(t, s)
	other := newSession(t, s)
	appendEvents(t, s, event(sess.ID, "t1", 1, "turn"), event(sess.ID, "t2", 1, "turn"), event(sess.ID, "t1", 2, "tool"),
		event(other.ID, "t1", 1, "turn"))
	got := events(t, s, sess.ID, "t1")
	if len(got) != 2 || got[0].Seq != 1 || got[1].Kind != "tool" || got[0].SessionID != sess.ID {
		t.Fatalf("turn t1 of %s: %+v", sess.ID, got)
	}
	if got := events(t, s, sess.ID, "nope"); len(got) != 0 {
		t.Fatalf("unknown turn: %+v", got)
	}
}

func testEventsDuplicate(t *testing.T, s EventStore) {
	sess := newSession(t, s)
	appendEvents(t, s, event(sess.ID, "t", 1, "turn"))
	if err := s.AppendTurnEvents(t.Context(), event(sess.ID, "t", 2, "call"), event(sess.ID, "t", 1, "turn")); err == nil {
		t.Fatal("a duplicate (session, turn, seq) was accepted")
	}
	if got := events(t, s, sess.ID, "t"); len(got) != 1 {
		t.Fatalf("a failed append stored %d events, want the first call's 1", len(got))
	}
}

func testEventsUnknownSession(t *testing.T, s EventStore) {
	err := s.AppendTurnEvents(t.Context(), event("no-such-session", "t", 1, "turn"))
	wantKind(t, "AppendTurnEvents to an unknown session", err, store.ErrNotFound, store.KindNotFound)
}

// A turn that ended its session (compression rotation) or lost its lease
// still records what it did: event writes are unfenced.
func testEventsEndedSession(t *testing.T, s EventStore) {
	sess := newSession(t, s)
	if err := s.EndSession(t.Context(), sess.ID, store.EndCompression); err != nil {
		t.Fatal(err)
	}
	appendEvents(t, s, event(sess.ID, "t", 1, "turn"))
	if got := events(t, s, sess.ID, ""); len(got) != 1 {
		t.Fatalf("ended session: %d events", len(got))
	}
}

func testEventsDeleted(t *testing.T, s EventStore) {
	sess := newSession(t, s)
	appendEvents(t, s, event(sess.ID, "t", 1, "turn"))
	if err := s.DeleteSession(t.Context(), sess.ID); err != nil {
		t.Fatal(err)
	}
	got, err := s.TurnEvents(t.Context(), sess.ID, "")
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("TurnEvents after delete: %v", err)
	}
	if len(got) != 0 {
		t.Fatalf("events outlived their session: %+v", got)
	}
	// A new session with the same id must not inherit them.
	again := newSession(t, s, func(x *store.Session) { x.ID = sess.ID })
	if got := events(t, s, again.ID, ""); len(got) != 0 {
		t.Fatalf("recreated session inherited events: %+v", got)
	}
}
