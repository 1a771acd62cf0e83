package storetest

import (
	"fmt"
	"testing"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

var fenceCases = []testCase[store.SessionService]{
	{"StaleTokenRejected", testStaleToken},
	{"NoLeaseRejected", testNoLease},
	{"UnfencedAllowed", testUnfenced},
	{"RejectedBatchWritesNothing", testRejectedBatch},
}

func testStaleToken(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	c := ctx(t)
	old := acquire(t, s, a.ID, "A")
	m := text(llm.RoleUser, "kept")
	appendMsgs(t, s, old.Fence(), m)
	if err := s.ReleaseLease(c, old); err != nil {
		t.Fatal(err)
	}
	acquire(t, s, a.ID, "B")
	stale := old.Fence()
	wrong := store.Fence{SessionID: a.ID, Token: 99}
	for _, f := range []store.Fence{stale, wrong} {
		for name, err := range map[string]error{
			"Append":  s.Append(c, f, text(llm.RoleUser, "x")),
			"Replace": s.Replace(c, f, 10, text(llm.RoleUser, "x")),
			"Delete":  s.Delete(c, f, m.ID),
		} {
			wantKind(t, fmt.Sprintf("%s with token %d", name, f.Token), err, store.ErrLeaseLost, store.KindLeaseLost)
		}
	}
	got := load(t, s, a.ID, store.MessageQuery{IncludeArchived: true})
	if len(got) != 1 || got[0].Archived {
		t.Fatalf("rejected writes changed the session: %v", texts(got))
	}
}

func testNoLease(t *testing.T, s store.SessionService) {
	a, b := newSession(t, s), newSession(t, s)
	// b's lease has token 1, which says nothing about a (no lease yet).
	lb := acquire(t, s, b.ID, "A")
	err := s.Append(ctx(t), store.Fence{SessionID: a.ID, Token: lb.Token}, text(llm.RoleUser, "x"))
	wantKind(t, "Append with another session's token", err, store.ErrLeaseLost, store.KindLeaseLost)
}

func testUnfenced(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	l := acquire(t, s, a.ID, "A")
	// Token 0 writes unfenced even while someone holds the lease.
	appendMsgs(t, s, store.Fence{SessionID: a.ID}, text(llm.RoleUser, "carried user message"))
	appendMsgs(t, s, l.Fence(), text(llm.RoleAssistant, "answer"))
	if got := fmt.Sprint(seqs(load(t, s, a.ID, store.MessageQuery{}))); got != "[1 2]" {
		t.Fatalf("seqs = %s", got)
	}
}

func testRejectedBatch(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	l := acquire(t, s, a.ID, "A")
	acquire(t, s, a.ID, "A") // replaces l's token
	batch := []*store.Message{text(llm.RoleUser, "1"), text(llm.RoleAssistant, "2"), text(llm.RoleUser, "3")}
	err := s.Append(ctx(t), l.Fence(), batch...)
	wantKind(t, "Append batch", err, store.ErrLeaseLost, store.KindLeaseLost)
	for i, m := range batch {
		if m.ID != 0 || m.Seq != 0 || m.SessionID != "" {
			t.Fatalf("rejected message %d got ID %d Seq %d SessionID %q", i, m.ID, m.Seq, m.SessionID)
		}
	}
	if got := load(t, s, a.ID, store.MessageQuery{IncludeArchived: true}); len(got) != 0 {
		t.Fatalf("rejected batch left %d rows", len(got))
	}
}
