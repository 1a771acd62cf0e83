package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// foldCases are the rules of the folded turn writes: AcquireLeaseAppend
// (the lease and a turn's first rows in one transaction) and AppendSpend
// (rows and their cost in one transaction).
var foldCases = []testCase[store.SessionService]{
	{"AcquireAppendTakesLeaseAndRows", testAcquireAppend},
	{"AcquireAppendHeld", testAcquireAppendHeld},
	{"AcquireAppendEndedTakesNothing", testAcquireAppendEnded},
	{"AcquireAppendUnknownSession", testAcquireAppendUnknown},
	{"AcquireAppendFencesOutThePreviousHolder", testAcquireAppendFence},
	{"AppendSpendRecordsUsageWithRows", testAppendSpend},
	{"AppendSpendRefusedAddsNothing", testAppendSpendRefused},
	{"CancelledFoldedWritesAreAllOrNothing", testFoldedCancel},
}

// spend is a Spend of n calls with recognisable numbers.
func spend(n int64) store.Spend {
	return store.Spend{Usage: llm.Usage{InputTokens: 100 * n, OutputTokens: 10 * n, CacheReadTokens: n,
		CacheWriteTokens: 2 * n, ReasoningTokens: 3 * n, Reported: true}, CostUSD: 0.25 * float64(n), APICalls: n}
}

// counters is what a session's counters say, as a Spend.
func counters(t *testing.T, s store.SessionService, id string) store.Spend {
	t.Helper()
	g := getSession(t, s, id)
	return store.Spend{Usage: g.Usage, CostUSD: g.CostUSD, APICalls: g.APICalls}
}

func testAcquireAppend(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	c := ctx(t)
	msgs := []*store.Message{text(llm.RoleUser, "first"), text(llm.RoleUser, "second")}
	l, err := s.AcquireLeaseAppend(c, a.ID, "A", time.Minute, msgs...)
	if err != nil {
		t.Fatalf("AcquireLeaseAppend: %v", err)
	}
	if l.Token != 1 || l.Holder != "A" || l.SessionID != a.ID || !l.ExpiresAt.After(l.AcquiredAt) {
		t.Fatalf("lease %+v", l)
	}
	for i, m := range msgs {
		if m.ID == 0 || m.Seq != int64(i+1) || m.SessionID != a.ID || m.CreatedAt.IsZero() {
			t.Fatalf("message %d: ID %d Seq %d SessionID %q CreatedAt %v", i, m.ID, m.Seq, m.SessionID, m.CreatedAt)
		}
	}
	// The lease is as held as one AcquireLease took: others wait, its
	// fence writes, and its holder may release it.
	_, err = s.AcquireLease(c, a.ID, "B", time.Minute)
	var held *store.LeaseHeldError
	if !errors.As(err, &held) || held.Holder != "A" || held.Token != l.Token {
		t.Fatalf("B acquiring: %v, want LeaseHeldError naming A with token %d", err, l.Token)
	}
	appendMsgs(t, s, l.Fence(), text(llm.RoleAssistant, "answer"))
	if got := fmt.Sprint(texts(load(t, s, a.ID, store.MessageQuery{}))); got != "[first second answer]" {
		t.Fatalf("rows %s", got)
	}
	if err := s.ReleaseLease(c, l); err != nil {
		t.Fatal(err)
	}
	// With no rows it takes the lease alone, with the next token.
	l2, err := s.AcquireLeaseAppend(c, a.ID, "B", time.Minute)
	if err != nil || l2.Token != l.Token+1 {
		t.Fatalf("AcquireLeaseAppend without rows: %+v, %v; want token %d", l2, err, l.Token+1)
	}
	if got := len(load(t, s, a.ID, store.MessageQuery{})); got != 3 {
		t.Fatalf("a rowless acquire left %d rows, want 3", got)
	}
}

func testAcquireAppendHeld(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	c := ctx(t)
	la := acquire(t, s, a.ID, "A")
	m := text(llm.RoleUser, "must not land")
	_, err := s.AcquireLeaseAppend(c, a.ID, "B", time.Minute, m)
	var held *store.LeaseHeldError
	if !errors.As(err, &held) || held.Holder != "A" || held.Token != la.Token {
		t.Fatalf("AcquireLeaseAppend on A's lease: %v, want LeaseHeldError naming A", err)
	}
	if m.ID != 0 || m.Seq != 0 {
		t.Fatalf("refused message got ID %d Seq %d", m.ID, m.Seq)
	}
	if got := load(t, s, a.ID, store.MessageQuery{IncludeArchived: true}); len(got) != 0 {
		t.Fatalf("a refused acquire wrote %v", texts(got))
	}
	// A still holds it and writes.
	appendMsgs(t, s, la.Fence(), text(llm.RoleUser, "A's"))
	// The same holder re-acquires with a new token, like AcquireLease.
	l2, err := s.AcquireLeaseAppend(c, a.ID, "A", time.Minute, text(llm.RoleUser, "again"))
	if err != nil || l2.Token != la.Token+1 {
		t.Fatalf("same holder: %+v, %v", l2, err)
	}
}

func testAcquireAppendEnded(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	c := ctx(t)
	l := acquire(t, s, a.ID, "A")
	if err := s.EndSession(c, a.ID, store.EndCompression); err != nil {
		t.Fatal(err)
	}
	// Held and ended: the held lease is reported first, as AcquireLease
	// followed by a liveness check would.
	_, err := s.AcquireLeaseAppend(c, a.ID, "B", time.Minute, text(llm.RoleUser, "x"))
	var held *store.LeaseHeldError
	if !errors.As(err, &held) {
		t.Fatalf("held and ended: %v, want LeaseHeldError", err)
	}
	if err := s.ReleaseLease(c, l); err != nil {
		t.Fatal(err)
	}
	m := text(llm.RoleUser, "too late")
	_, err = s.AcquireLeaseAppend(c, a.ID, "B", time.Minute, m)
	wantKind(t, "AcquireLeaseAppend on an ended session", err, store.ErrEnded, store.KindEnded)
	if m.ID != 0 {
		t.Fatalf("refused message got ID %d", m.ID)
	}
	if got := load(t, s, a.ID, store.MessageQuery{IncludeArchived: true}); len(got) != 0 {
		t.Fatalf("ended session got rows %v", texts(got))
	}
	// Nothing was taken: another holder gets the lease at once, with the
	// token after A's.
	lc, err := s.AcquireLease(c, a.ID, "C", time.Minute)
	if err != nil || lc.Token != l.Token+1 {
		t.Fatalf("after the refused acquire: %+v, %v; want the lease free with token %d", lc, err, l.Token+1)
	}
	_, err = s.AcquireLeaseAppend(c, a.ID, "C", time.Minute)
	wantKind(t, "rowless AcquireLeaseAppend on an ended session", err, store.ErrEnded, store.KindEnded)
}

func testAcquireAppendUnknown(t *testing.T, s store.SessionService) {
	_, err := s.AcquireLeaseAppend(ctx(t), "no-such-session", "A", time.Minute, text(llm.RoleUser, "x"))
	wantKind(t, "AcquireLeaseAppend on an unknown session", err, store.ErrNotFound, store.KindNotFound)
	_, err = s.AcquireLeaseAppend(ctx(t), "no-such-session", "A", 0)
	if err == nil {
		t.Fatal("AcquireLeaseAppend with ttl 0 succeeded")
	}
}

func testAcquireAppendFence(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	c := ctx(t)
	old, err := s.AcquireLeaseAppend(c, a.ID, "A", shortTTL, text(llm.RoleUser, "A's turn"))
	if err != nil {
		t.Fatal(err)
	}
	// A's lease expires; B takes over with its own first row.
	time.Sleep(shortTTL + 50*time.Millisecond)
	nl, err := s.AcquireLeaseAppend(c, a.ID, "B", time.Minute, text(llm.RoleUser, "B's turn"))
	if err != nil || nl.Token <= old.Token {
		t.Fatalf("takeover after expiry: %+v, %v", nl, err)
	}
	for name, err := range map[string]error{
		"Append":      s.Append(c, old.Fence(), text(llm.RoleAssistant, "stale")),
		"AppendSpend": s.AppendSpend(c, old.Fence(), spend(1), text(llm.RoleAssistant, "stale")),
	} {
		wantKind(t, name+" with the stale token", err, store.ErrLeaseLost, store.KindLeaseLost)
	}
	if _, err := s.RefreshLease(c, old, time.Minute); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("refreshing the stale lease: %v", err)
	}
	if got := fmt.Sprint(texts(load(t, s, a.ID, store.MessageQuery{}))); got != "[A's turn B's turn]" {
		t.Fatalf("rows %s", got)
	}
	if got := counters(t, s, a.ID); got.APICalls != 0 {
		t.Fatalf("a refused AppendSpend added %+v", got)
	}
}

func testAppendSpend(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	c := ctx(t)
	l := acquire(t, s, a.ID, "A")
	if err := s.AddUsage(c, a.ID, spend(1).Usage, spend(1).CostUSD, 1); err != nil {
		t.Fatal(err)
	}
	m := text(llm.RoleAssistant, "answer")
	if err := s.AppendSpend(c, l.Fence(), spend(2), m); err != nil {
		t.Fatalf("AppendSpend: %v", err)
	}
	if m.ID == 0 || m.Seq != 1 || m.SessionID != a.ID {
		t.Fatalf("message ID %d Seq %d SessionID %q", m.ID, m.Seq, m.SessionID)
	}
	if got, want := counters(t, s, a.ID), spend(3); got != want {
		t.Fatalf("counters %+v, want %+v (AddUsage's and AppendSpend's)", got, want)
	}
	// Rows alone, and a zero spend, add nothing; spend alone adds.
	if err := s.AppendSpend(c, l.Fence(), store.Spend{}, text(llm.RoleUser, "more")); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendSpend(c, l.Fence(), spend(1)); err != nil {
		t.Fatalf("AppendSpend without rows: %v", err)
	}
	if got, want := counters(t, s, a.ID), spend(4); got != want {
		t.Fatalf("counters %+v, want %+v", got, want)
	}
	// Unfenced (token 0) works like Append.
	if err := s.AppendSpend(c, store.Fence{SessionID: a.ID}, spend(1), text(llm.RoleUser, "carried")); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(seqs(load(t, s, a.ID, store.MessageQuery{}))); got != "[1 2 3]" {
		t.Fatalf("seqs %s", got)
	}
}

func testAppendSpendRefused(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	c := ctx(t)
	l := acquire(t, s, a.ID, "A")
	acquire(t, s, a.ID, "A") // l is stale now
	for _, f := range []store.Fence{l.Fence(), {SessionID: a.ID, Token: 99}} {
		err := s.AppendSpend(c, f, spend(1), text(llm.RoleAssistant, "x"))
		wantKind(t, fmt.Sprintf("AppendSpend with token %d", f.Token), err, store.ErrLeaseLost, store.KindLeaseLost)
		err = s.AppendSpend(c, f, spend(1))
		wantKind(t, fmt.Sprintf("rowless AppendSpend with token %d", f.Token), err, store.ErrLeaseLost, store.KindLeaseLost)
	}
	b := newSession(t, s)
	lb := acquire(t, s, b.ID, "A")
	if err := s.EndSession(c, b.ID, store.EndCompression); err != nil {
		t.Fatal(err)
	}
	err := s.AppendSpend(c, lb.Fence(), spend(1), text(llm.RoleAssistant, "x"))
	wantKind(t, "AppendSpend on an ended session", err, store.ErrEnded, store.KindEnded)
	err = s.AppendSpend(c, store.Fence{SessionID: "no-such-session"}, spend(1), text(llm.RoleAssistant, "x"))
	wantKind(t, "AppendSpend on an unknown session", err, store.ErrNotFound, store.KindNotFound)
	for _, id := range []string{a.ID, b.ID} {
		if got := counters(t, s, id); got != (store.Spend{}) {
			t.Fatalf("refused writes added %+v to %s", got, id)
		}
		if got := load(t, s, id, store.MessageQuery{IncludeArchived: true}); len(got) != 0 {
			t.Fatalf("refused writes stored %v", texts(got))
		}
	}
}

// testFoldedCancel runs turn-shaped cycles — AcquireLeaseAppend with the
// user's row, AppendSpend with the answer and its cost, release — each
// folded write under a context that ends at a random moment, so some are
// cut short anywhere inside their transaction, the way a crash would cut
// them. Whatever a cut left, the store must say that each folded write
// happened whole or not at all: a user row for every token the folded
// acquires took, and counters equal to the cost of the stored answers.
func testFoldedCancel(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	const rounds = 60
	rng := rand.New(rand.NewPCG(1, 2))
	cut := func() (context.Context, context.CancelFunc) {
		// Log-uniform from 1µs (over before the write commits) to 4ms
		// (long enough for most writes), so backends of any speed see
		// writes cut at every stage.
		return context.WithTimeout(ctx(t), time.Duration(math.Exp(rng.Float64()*math.Log(4000)))*time.Microsecond)
	}
	var plain int64 // tokens taken by plain acquires
	for i := range rounds {
		c, cancel := cut()
		_, _ = s.AcquireLeaseAppend(c, a.ID, "A", time.Minute, text(llm.RoleUser, fmt.Sprint("user ", i)))
		cancel()
		// Whether or not that took the lease, take it plainly (the same
		// holder may) to learn the current token.
		l := acquire(t, s, a.ID, "A")
		plain++
		c, cancel = cut()
		_ = s.AppendSpend(c, l.Fence(), spend(1), text(llm.RoleAssistant, fmt.Sprint("answer ", i)))
		cancel()
		if err := s.ReleaseLease(ctx(t), l); err != nil {
			t.Fatal(err)
		}
	}
	l := acquire(t, s, a.ID, "A")
	plain++
	var users, answers int64
	for _, m := range load(t, s, a.ID, store.MessageQuery{}) {
		switch m.Role {
		case llm.RoleUser:
			users++
		case llm.RoleAssistant:
			answers++
		}
	}
	if folded := l.Token - plain; users != folded {
		t.Fatalf("%d user rows stored, but folded acquires took %d tokens: a lease was taken without its rows or rows written without the lease", users, folded)
	}
	want := spend(answers)
	if answers == 0 {
		// Every AppendSpend was cut before it committed (a slow backend on
		// a loaded machine): no spend was ever reported.
		want = store.Spend{}
	}
	if got := counters(t, s, a.ID); got != want {
		t.Fatalf("counters %+v, but %d answers were stored (want %+v): a spend committed without its rows or rows without their spend", got, answers, want)
	}
	// The rule is stronger when some of each were cut and some not.
	t.Logf("cut %d of %d folded acquires and %d of %d answers", rounds-users, rounds, rounds-answers, rounds)
}

// testSharedFoldedRace has holders on two nodes take one session's lease
// with their first row at once, round after round: exactly one wins each
// round, exactly its row is stored, and the loser sees the winner's lease.
func testSharedFoldedRace(t *testing.T, a, b store.Store) {
	sess := newSession(t, a)
	nodes := []store.Store{a, b}
	const workers = 6
	for round := range 4 {
		var wg sync.WaitGroup
		type result struct {
			l   store.Lease
			err error
			txt string
		}
		results := make(chan result, workers)
		for w := range workers {
			wg.Go(func() {
				txt := fmt.Sprintf("r%d-w%d", round, w)
				l, err := nodes[w%2].AcquireLeaseAppend(ctx(t), sess.ID, fmt.Sprint("holder-", w), time.Minute,
					text(llm.RoleUser, txt))
				results <- result{l, err, txt}
			})
		}
		wg.Wait()
		close(results)
		var won []result
		for r := range results {
			var held *store.LeaseHeldError
			switch {
			case r.err == nil:
				won = append(won, r)
			case errors.As(r.err, &held):
			default:
				t.Fatalf("round %d: AcquireLeaseAppend: %v", round, r.err)
			}
		}
		if len(won) != 1 {
			t.Fatalf("round %d: %d holders won one lease, want 1", round, len(won))
		}
		got := texts(load(t, b, sess.ID, store.MessageQuery{}))
		if len(got) != round+1 || got[round] != won[0].txt {
			t.Fatalf("round %d: rows %v, want the winner's %q last", round, got, won[0].txt)
		}
		if err := a.ReleaseLease(ctx(t), won[0].l); err != nil {
			t.Fatal(err)
		}
	}
}
