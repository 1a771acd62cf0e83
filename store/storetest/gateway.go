package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// The gateway's rules: session owners, tokens, the durable queue.

var tokenCases = []testCase[GatewayStore]{
	{"CreateLookupRevoke", testTokenLifecycle},
	{"HashUnique", testTokenHashUnique},
	{"BlankNamesRefused", testTokenBlankRefused},
	{"NamesUnique", testTokenNamesUnique},
	{"ScopeAndManaged", testTokenScopeManaged},
}

var queueCases = []testCase[GatewayStore]{
	{"FIFOPerSession", testQueueFIFO},
	{"StartedSurvivesReopenFields", testQueueStarted},
	{"UnknownSession", testQueueUnknownSession},
	{"DeleteSessionDropsQueue", testQueueDeleteSession},
}

var principalCases = []testCase[GatewayStore]{
	{"ListByPrincipal", testListByPrincipal},
	{"SearchByPrincipal", testSearchByPrincipal},
}

func testTokenLifecycle(t *testing.T, s GatewayStore) {
	tok := &store.Token{Name: "ci", Principal: "alice", Hash: "aa11"}
	if err := s.CreateToken(ctx(t), tok); err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	if tok.ID == "" || tok.CreatedAt.IsZero() {
		t.Fatalf("CreateToken did not fill ID/CreatedAt: %+v", tok)
	}
	got, err := s.TokenByHash(ctx(t), "aa11")
	if err != nil {
		t.Fatalf("TokenByHash: %v", err)
	}
	if got.ID != tok.ID || got.Name != "ci" || got.Principal != "alice" || !got.RevokedAt.IsZero() {
		t.Fatalf("TokenByHash = %+v, want %+v", got, tok)
	}
	if _, err := s.TokenByHash(ctx(t), "bb22"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown hash: err = %v, want ErrNotFound", err)
	}
	if err := s.RevokeToken(ctx(t), tok.ID); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	if err := s.RevokeToken(ctx(t), tok.ID); err != nil {
		t.Fatalf("second RevokeToken: %v", err)
	}
	if _, err := s.TokenByHash(ctx(t), "aa11"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoked token: err = %v, want ErrNotFound", err)
	}
	if err := s.RevokeToken(ctx(t), "tok_missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoke unknown: err = %v, want ErrNotFound", err)
	}
	list, err := s.ListTokens(ctx(t))
	if err != nil {
		t.Fatalf("ListTokens: %v", err)
	}
	if len(list) != 1 || list[0].ID != tok.ID || list[0].RevokedAt.IsZero() {
		t.Fatalf("ListTokens = %+v, want the one revoked token", list)
	}
}

func testTokenHashUnique(t *testing.T, s GatewayStore) {
	if err := s.CreateToken(ctx(t), &store.Token{Name: "a", Principal: "p", Hash: "h"}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx(t), &store.Token{Name: "b", Principal: "q", Hash: "h"}); err == nil {
		t.Fatal("a second token with the same hash was accepted")
	}
	got, err := s.TokenByHash(ctx(t), "h")
	if err != nil || got.Principal != "p" {
		t.Fatalf("TokenByHash = %+v, %v; want the first token", got, err)
	}
}

func testQueueFIFO(t *testing.T, s GatewayStore) {
	a, b := newSession(t, s), newSession(t, s)
	var want []int64
	for i, sid := range []string{a.ID, b.ID, a.ID, a.ID} {
		q := &store.QueuedMessage{SessionID: sid, TurnID: "t" + string(rune('0'+i)), Text: "msg"}
		if err := s.Enqueue(ctx(t), q); err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
		if q.ID == 0 || q.CreatedAt.IsZero() {
			t.Fatalf("Enqueue did not fill ID/CreatedAt: %+v", q)
		}
		if sid == a.ID {
			want = append(want, q.ID)
		}
	}
	got, err := s.Queued(ctx(t), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("Queued(a) = %+v, want 3", got)
	}
	for i := range got {
		if got[i].ID != want[i] || got[i].SessionID != a.ID || got[i].Text != "msg" {
			t.Fatalf("Queued(a)[%d] = %+v, want id %d", i, got[i], want[i])
		}
	}
	all, err := s.Queued(ctx(t), "")
	if err != nil || len(all) != 4 {
		t.Fatalf("Queued(\"\") = %d rows, %v; want 4", len(all), err)
	}
	for i := 1; i < len(all); i++ {
		if all[i].ID <= all[i-1].ID {
			t.Fatalf("Queued(\"\") not in id order: %+v", all)
		}
	}
	if err := s.Dequeue(ctx(t), want[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.Dequeue(ctx(t), want[0]); err != nil {
		t.Fatalf("second Dequeue: %v", err)
	}
	got, _ = s.Queued(ctx(t), a.ID)
	if len(got) != 2 || got[0].ID != want[1] {
		t.Fatalf("after Dequeue: %+v, want head %d", got, want[1])
	}
}

func testQueueStarted(t *testing.T, s GatewayStore) {
	a := newSession(t, s)
	q := &store.QueuedMessage{SessionID: a.ID, TurnID: "t1", Text: "hello"}
	if err := s.Enqueue(ctx(t), q); err != nil {
		t.Fatal(err)
	}
	at := base.Add(time.Hour)
	if err := s.MarkStarted(ctx(t), q.ID, at); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Queued(ctx(t), a.ID)
	if len(got) != 1 || !got[0].StartedAt.Equal(at) || got[0].TurnID != "t1" {
		t.Fatalf("Queued = %+v, want started at %v", got, at)
	}
	if err := s.MarkStarted(ctx(t), q.ID+1000, at); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("MarkStarted(unknown) = %v, want ErrNotFound", err)
	}
}

func testQueueUnknownSession(t *testing.T, s GatewayStore) {
	err := s.Enqueue(ctx(t), &store.QueuedMessage{SessionID: "nope", TurnID: "t", Text: "x"})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Enqueue(unknown session) = %v, want ErrNotFound", err)
	}
}

func testQueueDeleteSession(t *testing.T, s GatewayStore) {
	a := newSession(t, s)
	if err := s.Enqueue(ctx(t), &store.QueuedMessage{SessionID: a.ID, TurnID: "t", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx(t), a.ID); err != nil {
		t.Fatal(err)
	}
	all, err := s.Queued(ctx(t), "")
	if err != nil || len(all) != 0 {
		t.Fatalf("queue after DeleteSession = %+v, %v; want empty", all, err)
	}
}

func testListByPrincipal(t *testing.T, s GatewayStore) {
	a := newSession(t, s, func(x *store.Session) { x.Principal = "alice" })
	newSession(t, s, func(x *store.Session) { x.Principal = "bob" })
	newSession(t, s)
	got, err := s.GetSession(ctx(t), a.ID)
	if err != nil || got.Principal != "alice" {
		t.Fatalf("GetSession principal = %+v, %v; want alice", got, err)
	}
	list, err := s.ListSessions(ctx(t), store.ListOptions{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != a.ID {
		t.Fatalf("ListSessions(alice) = %+v, want only %s", list, a.ID)
	}
	all, _ := s.ListSessions(ctx(t), store.ListOptions{})
	if len(all) != 3 {
		t.Fatalf("ListSessions() = %d, want 3", len(all))
	}
}

func testSearchByPrincipal(t *testing.T, s GatewayStore) {
	a := newSession(t, s, func(x *store.Session) { x.Principal = "alice" })
	b := newSession(t, s, func(x *store.Session) { x.Principal = "bob" })
	appendMsgs(t, s, store.Fence{SessionID: a.ID}, text(llm.RoleUser, "alice likes quinces"))
	appendMsgs(t, s, store.Fence{SessionID: b.ID}, text(llm.RoleUser, "bob likes quinces"))
	hits := search(t, s, "quinces", store.SearchOptions{Principal: "bob"})
	if len(hits) != 1 || hits[0].SessionID != b.ID {
		t.Fatalf("Search(bob) = %+v, want only %s", hits, b.ID)
	}
}

// A token must name someone: an empty principal would read as "every
// principal" to the list and search queries.
func testTokenBlankRefused(t *testing.T, s GatewayStore) {
	for _, tc := range []struct{ name, principal, scope string }{
		{"", "p", ""}, {"  ", "p", ""}, {"n", "", ""}, {"n", " \t", ""}, {" n", "p", ""}, {"n", "p", "root"},
	} {
		err := s.CreateToken(ctx(t), &store.Token{Name: tc.name, Principal: tc.principal, Scope: tc.scope, Hash: "h" + tc.name + tc.principal + tc.scope})
		if !errors.Is(err, store.ErrTokenInvalid) {
			t.Errorf("CreateToken(name %q, principal %q, scope %q) = %v, want ErrTokenInvalid", tc.name, tc.principal, tc.scope, err)
		}
	}
	if list, err := s.ListTokens(ctx(t)); err != nil || len(list) != 0 {
		t.Fatalf("ListTokens = %+v, %v; want none stored", list, err)
	}
}

// Names are unique among valid tokens; a revoked token's name may be
// given again, and copying a revoked token keeps it.
func testTokenNamesUnique(t *testing.T, s GatewayStore) {
	first := &store.Token{Name: "ci", Principal: "alice", Hash: "h1"}
	if err := s.CreateToken(ctx(t), first); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx(t), &store.Token{Name: "ci", Principal: "bob", Hash: "h2"}); !errors.Is(err, store.ErrTokenNameTaken) {
		t.Fatalf("a second valid token named ci: err = %v, want ErrTokenNameTaken", err)
	}
	if err := s.CreateToken(ctx(t), &store.Token{Name: "ci", Principal: "bob", Hash: "h3", RevokedAt: time.Now()}); err != nil {
		t.Fatalf("a revoked token with a taken name (a copy): %v", err)
	}
	if err := s.RevokeToken(ctx(t), first.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx(t), &store.Token{Name: "ci", Principal: "alice", Hash: "h4"}); err != nil {
		t.Fatalf("the name of a revoked token given again: %v", err)
	}
}

func testTokenScopeManaged(t *testing.T, s GatewayStore) {
	if err := s.CreateToken(ctx(t), &store.Token{Name: "op", Principal: "ops", Hash: "ha", Scope: store.ScopeAdmin, Managed: true}); err != nil {
		t.Fatal(err)
	}
	got, err := s.TokenByHash(ctx(t), "ha")
	if err != nil || got.Scope != store.ScopeAdmin || !got.Managed {
		t.Fatalf("TokenByHash = %+v, %v; want scope admin, managed", got, err)
	}
	list, err := s.ListTokens(ctx(t))
	if err != nil || len(list) != 1 || list[0].Scope != store.ScopeAdmin || !list[0].Managed {
		t.Fatalf("ListTokens = %+v, %v", list, err)
	}
}
