package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

var leaseCases = []testCase[store.SessionService]{
	{"AcquireNew", testAcquireNew},
	{"HeldByAnother", testLeaseHeld},
	{"SameHolderReacquires", testSameHolder},
	{"ExpiryAndTakeover", testTakeover},
	{"Refresh", testRefresh},
	{"Release", testRelease},
	{"TokenMonotonic", testTokenMonotonic},
	{"InvalidTTL", testInvalidTTL},
}

// shortTTL and expiryWait are the only real-time waits of the suite: a
// lease must be observed past its expiry.
const (
	shortTTL   = 50 * time.Millisecond
	expiryWait = 100 * time.Millisecond
)

func testAcquireNew(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	l := acquire(t, s, a.ID, "host-1/pid-42")
	if l.SessionID != a.ID || l.Holder != "host-1/pid-42" || l.Token != 1 {
		t.Fatalf("lease = %+v, want token 1 for host-1/pid-42", l)
	}
	if l.AcquiredAt.IsZero() || !l.ExpiresAt.After(l.AcquiredAt) {
		t.Fatalf("lease times: acquired %v expires %v", l.AcquiredAt, l.ExpiresAt)
	}
	if got := l.Fence(); got != (store.Fence{SessionID: a.ID, Token: 1}) {
		t.Fatalf("Fence() = %+v", got)
	}
}

func testLeaseHeld(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	l := acquire(t, s, a.ID, "A")
	_, err := s.AcquireLease(ctx(t), a.ID, "B", time.Minute)
	var held *store.LeaseHeldError
	if !errors.As(err, &held) {
		t.Fatalf("second holder got %v, want *store.LeaseHeldError", err)
	}
	if held.Holder != "A" || held.SessionID != a.ID || held.Token != l.Token || !held.ExpiresAt.Equal(l.ExpiresAt) {
		t.Fatalf("LeaseHeldError = %+v, want holder A with token %d until %v", held, l.Token, l.ExpiresAt)
	}
	// The holder's lease still works.
	appendMsgs(t, s, l.Fence(), text(llm.RoleUser, "still mine"))
}

func testSameHolder(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	l1 := acquire(t, s, a.ID, "A")
	l2 := acquire(t, s, a.ID, "A")
	if l2.Token <= l1.Token {
		t.Fatalf("re-acquire token %d, want > %d", l2.Token, l1.Token)
	}
	err := s.Append(ctx(t), l1.Fence(), text(llm.RoleUser, "stale"))
	wantKind(t, "Append with the replaced token", err, store.ErrLeaseLost, store.KindLeaseLost)
	appendMsgs(t, s, l2.Fence(), text(llm.RoleUser, "fresh"))
}

func testTakeover(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	c := ctx(t)
	old := expiredLease(t, s, a.ID, "A")
	taken, err := s.AcquireLease(c, a.ID, "B", time.Minute)
	if err != nil {
		t.Fatalf("takeover of an expired lease: %v", err)
	}
	if taken.Token != old.Token+1 || taken.Holder != "B" {
		t.Fatalf("takeover lease = %+v, want token %d for B", taken, old.Token+1)
	}
	_, err = s.RefreshLease(c, old, time.Minute)
	wantKind(t, "RefreshLease of a taken-over lease", err, store.ErrLeaseLost, store.KindLeaseLost)
	err = s.Append(c, old.Fence(), text(llm.RoleUser, "zombie write"))
	wantKind(t, "Append with a taken-over token", err, store.ErrLeaseLost, store.KindLeaseLost)
	if err := s.ReleaseLease(c, old); err != nil {
		t.Fatalf("ReleaseLease of a lost lease: %v", err)
	}
	// Releasing the lost lease must not release the new holder's.
	appendMsgs(t, s, taken.Fence(), text(llm.RoleUser, "new holder writes"))
	if _, err := s.AcquireLease(c, a.ID, "C", time.Minute); err == nil {
		t.Fatal("C acquired a lease B still holds")
	}
}

func testRefresh(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	c := ctx(t)
	l := expiredLease(t, s, a.ID, "A")
	// Past expiry, nobody took over: the holder may refresh and write.
	r, err := s.RefreshLease(c, l, time.Minute)
	if err != nil {
		t.Fatalf("RefreshLease after expiry without takeover: %v", err)
	}
	if r.Token != l.Token || r.Holder != l.Holder || !r.ExpiresAt.After(l.ExpiresAt) {
		t.Fatalf("refreshed = %+v, from %+v", r, l)
	}
	appendMsgs(t, s, r.Fence(), text(llm.RoleUser, "after refresh"))
	// The refreshed lease now blocks others.
	if _, err := s.AcquireLease(c, a.ID, "B", time.Minute); err == nil {
		t.Fatal("B acquired a refreshed lease")
	}
	if err := s.ReleaseLease(c, r); err != nil {
		t.Fatal(err)
	}
	_, err = s.RefreshLease(c, r, time.Minute)
	wantKind(t, "RefreshLease after release", err, store.ErrLeaseLost, store.KindLeaseLost)
}

func testRelease(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	c := ctx(t)
	l := acquire(t, s, a.ID, "A")
	if err := s.ReleaseLease(c, l); err != nil {
		t.Fatalf("ReleaseLease: %v", err)
	}
	if err := s.ReleaseLease(c, l); err != nil {
		t.Fatalf("second ReleaseLease: %v", err)
	}
	err := s.Append(c, l.Fence(), text(llm.RoleUser, "after release"))
	wantKind(t, "Append with a released token", err, store.ErrLeaseLost, store.KindLeaseLost)
	// Anyone may take a released lease at once, with a larger token.
	b := acquire(t, s, a.ID, "B")
	if b.Token != l.Token+1 {
		t.Fatalf("token after release = %d, want %d", b.Token, l.Token+1)
	}
	// Releasing the old lease again does not touch B's.
	if err := s.ReleaseLease(c, l); err != nil {
		t.Fatal(err)
	}
	appendMsgs(t, s, b.Fence(), text(llm.RoleUser, "B writes"))
}

func testTokenMonotonic(t *testing.T, s store.SessionService) {
	a, other := newSession(t, s), newSession(t, s)
	var last int64
	for i := range 10 {
		holder := []string{"A", "B"}[i%2]
		l := acquire(t, s, a.ID, holder)
		if l.Token <= last {
			t.Fatalf("cycle %d: token %d not above %d", i, l.Token, last)
		}
		last = l.Token
		if err := s.ReleaseLease(ctx(t), l); err != nil {
			t.Fatal(err)
		}
	}
	// Tokens are per session.
	if l := acquire(t, s, other.ID, "A"); l.Token != 1 {
		t.Fatalf("another session's first token = %d, want 1", l.Token)
	}
}

func testInvalidTTL(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	for _, ttl := range []time.Duration{0, -time.Second} {
		if _, err := s.AcquireLease(ctx(t), a.ID, "A", ttl); err == nil {
			t.Fatalf("AcquireLease with ttl %v succeeded", ttl)
		}
	}
}
