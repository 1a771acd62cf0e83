package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// RunShared runs the rules for several nodes on one database: newPair
// returns two independently opened stores (separate connections or pools,
// as two processes would have) on the same fresh, empty database.
func RunShared(t *testing.T, newPair func(t *testing.T) (a, b store.Store)) {
	runPairs(t, newPair, []pairCase[store.Store]{
		{"LeaseHeldAcrossNodes", testSharedHeld},
		{"ConcurrentAppendsDifferentFences", testSharedFenceRace},
		{"TakeoverAfterExpiry", testSharedTakeover},
		{"TakeoverDuringAppendsNeverInterleaves", testSharedTakeoverRace},
		{"OneWinnerAcrossNodes", testSharedAcquireRace},
		{"FoldedAcquireOneWinnerAcrossNodes", testSharedFoldedRace},
		{"CooldownSeenByOtherNode", testSharedCooldown},
	})
}

func testSharedHeld(t *testing.T, a, b store.Store) {
	sess := newSession(t, a)
	l := acquire(t, a, sess.ID, "node-a")
	_, err := b.AcquireLease(ctx(t), sess.ID, "node-b", time.Minute)
	var held *store.LeaseHeldError
	if !errors.As(err, &held) || held.Holder != "node-a" || held.Token != l.Token {
		t.Fatalf("node b acquiring a's live lease: %v, want LeaseHeldError naming node-a", err)
	}
	// b sees a's rows and a's session.
	appendMsgs(t, a, l.Fence(), text(llm.RoleUser, "from a"))
	if got := texts(load(t, b, sess.ID, store.MessageQuery{})); fmt.Sprint(got) != "[from a]" {
		t.Fatalf("node b reads %v", got)
	}
}

// Two nodes each believe they hold the lease (a's expired and b took it
// over); they append at the same moment, round after round, taking turns
// as the current holder. Exactly one write of each round commits: the one
// with the current token.
func testSharedFenceRace(t *testing.T, a, b store.Store) {
	sess := newSession(t, a)
	nodes := []store.SessionService{a, b}
	var leases [2]store.Lease
	leases[0] = acquireTTL(t, a, sess.ID, "node-0", shortTTL)
	const rounds = 10
	for r := range rounds {
		cur := (r + 1) % 2 // the node taking over this round
		time.Sleep(expiryWait)
		nl, err := nodes[cur].AcquireLease(ctx(t), sess.ID, fmt.Sprint("node-", cur), shortTTL)
		if err != nil {
			t.Fatalf("round %d: takeover by node %d: %v", r, cur, err)
		}
		leases[cur] = nl
		var wg sync.WaitGroup
		var errs [2]error
		start := make(chan struct{})
		for i := range 2 {
			wg.Go(func() {
				<-start
				errs[i] = nodes[i].Append(ctx(t), leases[i].Fence(), text(llm.RoleUser, fmt.Sprintf("r%d-node%d", r, i)))
			})
		}
		close(start)
		wg.Wait()
		if errs[cur] != nil {
			t.Fatalf("round %d: current holder (node %d) refused: %v", r, cur, errs[cur])
		}
		wantKind(t, fmt.Sprintf("round %d: stale node %d", r, 1-cur), errs[1-cur], store.ErrLeaseLost, store.KindLeaseLost)
	}
	got := texts(load(t, a, sess.ID, store.MessageQuery{}))
	if len(got) != rounds {
		t.Fatalf("rows = %v, want one per round", got)
	}
	for r, txt := range got {
		if want := fmt.Sprintf("r%d-node%d", r, (r+1)%2); txt != want {
			t.Fatalf("row %d = %q, want %q", r, txt, want)
		}
	}
}

func testSharedTakeover(t *testing.T, a, b store.Store) {
	sess := newSession(t, a)
	c := ctx(t)
	old := acquireTTL(t, a, sess.ID, "node-a", shortTTL)
	appendMsgs(t, a, old.Fence(), text(llm.RoleUser, "before the crash"))
	time.Sleep(expiryWait)
	taken, err := b.AcquireLease(c, sess.ID, "node-b", time.Minute)
	if err != nil {
		t.Fatalf("node b taking over an expired lease: %v", err)
	}
	if taken.Token <= old.Token {
		t.Fatalf("takeover token %d, want > %d", taken.Token, old.Token)
	}
	// Every write of the old holder is refused now, on its own node.
	for name, err := range map[string]error{
		"Append":  a.Append(c, old.Fence(), text(llm.RoleAssistant, "zombie")),
		"Replace": a.Replace(c, old.Fence(), 10, text(llm.RoleUser, "zombie summary")),
		"Delete":  a.Delete(c, old.Fence(), 1),
	} {
		wantKind(t, "old holder's "+name, err, store.ErrLeaseLost, store.KindLeaseLost)
	}
	_, err = a.RefreshLease(c, old, time.Minute)
	wantKind(t, "old holder's RefreshLease", err, store.ErrLeaseLost, store.KindLeaseLost)
	if err := a.ReleaseLease(c, old); err != nil {
		t.Fatalf("old holder's ReleaseLease: %v", err)
	}
	// Its release did not free b's lease, and b goes on writing.
	if _, err := a.AcquireLease(c, sess.ID, "node-c", time.Minute); err == nil {
		t.Fatal("a third holder acquired b's live lease after the old holder released")
	}
	appendMsgs(t, b, taken.Fence(), text(llm.RoleAssistant, "after takeover"))
	got := load(t, b, sess.ID, store.MessageQuery{IncludeArchived: true})
	if fmt.Sprint(texts(got)) != "[before the crash after takeover]" || got[0].Archived {
		t.Fatalf("transcript = %v", texts(got))
	}
}

// Node a keeps appending under an expired lease while node b takes the
// session over. a's writes succeed until the takeover and fail after it;
// all of a's rows come before all of b's.
func testSharedTakeoverRace(t *testing.T, a, b store.Store) {
	sess := newSession(t, a)
	c := ctx(t)
	old := expiredLease(t, a, sess.ID, "node-a")
	started := make(chan struct{})
	var (
		wg       sync.WaitGroup
		once     sync.Once
		aOK      int
		aErr     error
		aRefused int
	)
	wg.Go(func() {
		defer once.Do(func() { close(started) })
		// Bounded, so a failed takeover ends the test instead of hanging it.
		for i := 0; i < 100000; i++ {
			err := a.Append(c, old.Fence(), text(llm.RoleUser, fmt.Sprint("a", i)))
			if i == 2 {
				once.Do(func() { close(started) })
			}
			switch {
			case err == nil && aRefused == 0:
				aOK++
			case err == nil:
				aErr = fmt.Errorf("write %d committed after an earlier one was refused", i)
				return
			case errors.Is(err, store.ErrLeaseLost):
				aRefused++
				if aRefused == 5 {
					return
				}
			default:
				aErr = err
				return
			}
		}
		aErr = errors.New("the old holder was never refused")
	})
	<-started
	taken, err := b.AcquireLease(c, sess.ID, "node-b", time.Minute)
	if err != nil {
		t.Fatalf("takeover: %v", err)
	}
	const bRows = 10
	for i := range bRows {
		appendMsgs(t, b, taken.Fence(), text(llm.RoleUser, fmt.Sprint("b", i)))
	}
	wg.Wait()
	if aErr != nil {
		t.Fatal(aErr)
	}
	got := texts(load(t, b, sess.ID, store.MessageQuery{}))
	if len(got) != aOK+bRows {
		t.Fatalf("rows = %d (%v), want %d of a and %d of b", len(got), got, aOK, bRows)
	}
	for i, txt := range got {
		want := fmt.Sprint("a", i)
		if i >= aOK {
			want = fmt.Sprint("b", i-aOK)
		}
		if txt != want {
			t.Fatalf("row %d = %q, want %q: transcript %v", i, txt, want, got)
		}
	}
}

func testSharedAcquireRace(t *testing.T, a, b store.Store) {
	for round := range 5 {
		sess := newSession(t, a)
		if won := raceAcquire(t, sess.ID, []store.SessionService{a, b}, 8); won != 1 {
			t.Fatalf("round %d: %d holders on two nodes acquired one lease, want 1", round, won)
		}
	}
}

func testSharedCooldown(t *testing.T, a, b store.Store) {
	c := ctx(t)
	until := time.Now().Add(time.Hour).UTC().Round(0)
	if err := a.SetCooldown(c, store.Cooldown{Provider: "openai", KeyID: "fp-1", Until: until, Reason: "rate_limit"}); err != nil {
		t.Fatal(err)
	}
	got, err := b.Cooldowns(c, "openai", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].KeyID != "fp-1" || !got[0].Until.Equal(until) || got[0].Reason != "rate_limit" {
		t.Fatalf("node b sees %+v, want node a's cooldown", got)
	}
	if err := b.ClearCooldown(c, "openai", "fp-1"); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Cooldowns(c, "openai", time.Now()); err != nil || len(got) != 0 {
		t.Fatalf("node a after b cleared: %+v, %v", got, err)
	}
}
