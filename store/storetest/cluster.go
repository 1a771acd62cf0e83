package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/store"
)

// ClusterStore is a backend that several gateway nodes can share.
type ClusterStore interface {
	store.Store
	store.Cluster
}

// RunCluster runs the rules of store.Cluster: newPair returns two
// independently opened stores on the same fresh, empty database.
func RunCluster(t *testing.T, newPair func(t *testing.T) (a, b ClusterStore)) {
	runPairs(t, newPair, []pairCase[ClusterStore]{
		{"ClaimOneWinnerAcrossNodes", testClaimOneWinner},
		{"ClaimWaitsForLiveLease", testClaimLiveLease},
		{"ClaimEmptyTakesNothing", testClaimEmpty},
		{"ClaimOrphanAfterExpiry", testClaimOrphan},
		{"ClaimSettlesAfterRelease", testClaimSettle},
		{"ClaimableSessions", testClaimable},
		{"StreamEventsOrderedAcrossNodes", testStreamOrder},
		{"StreamEventsFloorAndPaging", testStreamFloor},
		{"WatchWakesOtherNode", testStreamWatch},
		{"PruneStreamEvents", testStreamPrune},
	})
}

func enqueue(t *testing.T, s store.Store, sessionID string, texts ...string) []store.QueuedMessage {
	t.Helper()
	var out []store.QueuedMessage
	for _, x := range texts {
		q := &store.QueuedMessage{SessionID: sessionID, TurnID: "turn-" + x, Text: x}
		if err := s.Enqueue(ctx(t), q); err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
		out = append(out, *q)
	}
	return out
}

func claim(t *testing.T, s store.Cluster, sessionID, holder string, ttl, settle time.Duration) (store.Claim, bool) {
	t.Helper()
	c, ok, err := s.ClaimQueued(ctx(t), sessionID, holder, ttl, settle)
	if err != nil {
		t.Fatalf("ClaimQueued(%s): %v", holder, err)
	}
	return c, ok
}

// Two nodes claim one session's queue at once: exactly one gets the head,
// marked started, with the session's lease.
func testClaimOneWinner(t *testing.T, a, b ClusterStore) {
	for round := range 10 {
		sess := newSession(t, a)
		qs := enqueue(t, a, sess.ID, "one", "two")
		var wg sync.WaitGroup
		var got [2]bool
		var claims [2]store.Claim
		for i, s := range []ClusterStore{a, b} {
			wg.Go(func() {
				c, ok, err := s.ClaimQueued(context.Background(), sess.ID, fmt.Sprint("node-", i), time.Minute, time.Second)
				if err != nil {
					t.Errorf("round %d node %d: %v", round, i, err)
				}
				got[i], claims[i] = ok, c
			})
		}
		wg.Wait()
		if got[0] == got[1] {
			t.Fatalf("round %d: claims %v, want exactly one", round, got)
		}
		w := 0
		if got[1] {
			w = 1
		}
		c := claims[w]
		if c.Message.ID != qs[0].ID || c.Orphan || c.Message.StartedAt.IsZero() || c.Lease.Holder != fmt.Sprint("node-", w) {
			t.Fatalf("round %d: winner's claim %+v, want the head %d started under its lease", round, c, qs[0].ID)
		}
		list, err := b.Queued(ctx(t), sess.ID)
		if err != nil || len(list) != 2 || list[0].StartedAt.IsZero() || !list[1].StartedAt.IsZero() {
			t.Fatalf("round %d: queue after the claim %+v (%v): want the head started, the second waiting", round, list, err)
		}
		// The lease it took is the turn's: a write fenced with it commits.
		if _, err := a.RefreshLease(ctx(t), c.Lease, time.Minute); err != nil {
			t.Fatalf("round %d: the claim's lease does not refresh: %v", round, err)
		}
	}
}

// A live lease (a turn running on another node, or the CLI) keeps the
// queue where it is; its release frees it.
func testClaimLiveLease(t *testing.T, a, b ClusterStore) {
	sess := newSession(t, a)
	enqueue(t, a, sess.ID, "waits")
	l := acquire(t, a, sess.ID, "node-a")
	if c, ok := claim(t, b, sess.ID, "node-b", time.Minute, time.Second); ok {
		t.Fatalf("claimed %+v under node-a's live lease", c)
	}
	if err := a.ReleaseLease(ctx(t), l); err != nil {
		t.Fatal(err)
	}
	c, ok := claim(t, b, sess.ID, "node-b", time.Minute, time.Second)
	if !ok || c.Message.Text != "waits" || c.Orphan {
		t.Fatalf("after the release: %+v %v, want the waiting message", c, ok)
	}
	// node-b's lease is live now: node-a's claim and acquire wait.
	if _, ok := claim(t, a, sess.ID, "node-a", time.Minute, time.Second); ok {
		t.Fatal("node-a claimed while node-b holds the claim's lease")
	}
	if _, err := a.AcquireLease(ctx(t), sess.ID, "node-a", time.Minute); err == nil {
		t.Fatal("node-a acquired the lease of node-b's claim")
	}
}

// Claiming an empty queue takes no lease.
func testClaimEmpty(t *testing.T, a, b ClusterStore) {
	sess := newSession(t, a)
	if _, ok := claim(t, a, sess.ID, "node-a", time.Minute, time.Second); ok {
		t.Fatal("claimed from an empty queue")
	}
	if _, err := b.AcquireLease(ctx(t), sess.ID, "node-b", time.Minute); err != nil {
		t.Fatalf("an empty claim left the lease taken: %v", err)
	}
}

// A node dies after claiming: once its lease expires, another node gets
// the started message back as an orphan, under a new, larger token.
func testClaimOrphan(t *testing.T, a, b ClusterStore) {
	sess := newSession(t, a)
	qs := enqueue(t, a, sess.ID, "cut", "next")
	dead, ok := claim(t, a, sess.ID, "node-a", shortTTL, time.Hour)
	if !ok {
		t.Fatal("first claim failed")
	}
	time.Sleep(3 * shortTTL)
	c, ok := claim(t, b, sess.ID, "node-b", time.Minute, time.Hour)
	if !ok || !c.Orphan || c.Message.ID != qs[0].ID || c.Lease.Token <= dead.Lease.Token {
		t.Fatalf("after expiry: %+v %v, want message %d as an orphan with a larger token than %d", c, ok, qs[0].ID, dead.Lease.Token)
	}
	if _, err := a.RefreshLease(ctx(t), dead.Lease, time.Minute); err == nil {
		t.Fatal("the dead node's lease still refreshes after the takeover")
	}
}

// A message whose turn ended (lease released) but is still queued is
// being removed by its node: within settle nobody takes it; after, it is
// an orphan.
func testClaimSettle(t *testing.T, a, b ClusterStore) {
	sess := newSession(t, a)
	enqueue(t, a, sess.ID, "done")
	c, ok := claim(t, a, sess.ID, "node-a", time.Minute, time.Hour)
	if !ok {
		t.Fatal("claim failed")
	}
	if err := a.ReleaseLease(ctx(t), c.Lease); err != nil {
		t.Fatal(err)
	}
	if _, ok := claim(t, b, sess.ID, "node-b", time.Minute, time.Hour); ok {
		t.Fatal("claimed a just-finished message within settle")
	}
	c2, ok := claim(t, b, sess.ID, "node-b", time.Minute, 0)
	if !ok || !c2.Orphan || c2.Message.ID != c.Message.ID {
		t.Fatalf("after settle: %+v %v, want the message as an orphan", c2, ok)
	}
}

func testClaimable(t *testing.T, a, b ClusterStore) {
	free, held, empty := newSession(t, a), newSession(t, a), newSession(t, a)
	_ = empty
	enqueue(t, a, free.ID, "x")
	enqueue(t, a, held.ID, "y")
	acquire(t, a, held.ID, "node-a")
	expired := newSession(t, a)
	enqueue(t, a, expired.ID, "z")
	acquireTTL(t, a, expired.ID, "dead", shortTTL)
	time.Sleep(3 * shortTTL)
	got, err := b.ClaimableSessions(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{free.ID, expired.ID}
	slices.Sort(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ClaimableSessions = %v, want %v (queued, lease free or expired)", got, want)
	}
}

// Two nodes append events to one session at once: every event gets a
// distinct id, a reader polling meanwhile never sees an id appear below
// one it already saw, and the final list holds all, in id order.
func testStreamOrder(t *testing.T, a, b ClusterStore) {
	sess := newSession(t, a)
	const per = 100
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var seenErr error
	var reader sync.WaitGroup
	reader.Go(func() {
		var last int64
		seen := map[int64]bool{}
		for {
			select {
			case <-stop:
				return
			default:
			}
			evs, err := b.StreamEvents(context.Background(), sess.ID, last, 0)
			if err != nil {
				seenErr = err
				return
			}
			for _, e := range evs {
				seen[e.ID] = true
				last = e.ID
			}
			// Reading from the start must show nothing at or below last
			// that the reads after last did not: no id commits late.
			all, err := b.StreamEvents(context.Background(), sess.ID, 0, 0)
			if err != nil {
				seenErr = err
				return
			}
			for _, e := range all {
				if e.ID <= last && !seen[e.ID] {
					seenErr = fmt.Errorf("event %d appeared after %d was already visible", e.ID, last)
					return
				}
			}
		}
	})
	var prevMu sync.Mutex
	prev := map[int64]int64{} // id -> the Prev its append reported
	for i, s := range []ClusterStore{a, b} {
		wg.Go(func() {
			for j := range per {
				ev := &store.StreamEvent{SessionID: sess.ID, Type: "text_delta", TurnID: "t", Data: fmt.Appendf(nil, "%d-%d", i, j)}
				if err := s.AppendStreamEvent(context.Background(), ev, 0); err != nil {
					t.Errorf("append: %v", err)
					return
				}
				prevMu.Lock()
				prev[ev.ID] = ev.Prev
				prevMu.Unlock()
			}
		})
	}
	wg.Wait()
	close(stop)
	reader.Wait()
	if seenErr != nil {
		t.Fatal(seenErr)
	}
	all, err := a.StreamEvents(ctx(t), sess.ID, 0, 0)
	if err != nil || len(all) != 2*per {
		t.Fatalf("%d events (%v), want %d", len(all), err, 2*per)
	}
	for i := 1; i < len(all); i++ {
		if all[i].ID <= all[i-1].ID {
			t.Fatalf("ids not increasing at %d: %d then %d", i, all[i-1].ID, all[i].ID)
		}
		if prev[all[i].ID] != all[i-1].ID {
			t.Fatalf("event %d reported Prev %d, but the event before it is %d", all[i].ID, prev[all[i].ID], all[i-1].ID)
		}
	}
	if last, err := b.LastStreamEventID(ctx(t), sess.ID); err != nil || last != all[len(all)-1].ID {
		t.Fatalf("LastStreamEventID = %d, %v; want %d", last, err, all[len(all)-1].ID)
	}
}

func testStreamFloor(t *testing.T, a, b ClusterStore) {
	sess := newSession(t, a)
	if id, err := a.LastStreamEventID(ctx(t), sess.ID); err != nil || id != 0 {
		t.Fatalf("LastStreamEventID of a new session = %d, %v", id, err)
	}
	add := func(s ClusterStore, floor int64, data string) int64 {
		ev := &store.StreamEvent{SessionID: sess.ID, Type: "message", Data: []byte(data)}
		if err := s.AppendStreamEvent(ctx(t), ev, floor); err != nil {
			t.Fatal(err)
		}
		return ev.ID
	}
	if id := add(a, 5<<24, "row 5"); id != 5<<24 {
		t.Fatalf("floor 5<<24 gave id %d", id)
	}
	if id := add(b, 0, "live"); id != 5<<24+1 {
		t.Fatalf("next live id %d, want %d", id, 5<<24+1)
	}
	ev := &store.StreamEvent{SessionID: sess.ID, Type: "status"}
	if err := a.AppendStreamEvent(ctx(t), ev, 7<<24); err != nil || ev.ID != 7<<24 || ev.Prev != 5<<24+1 {
		t.Fatalf("event at floor 7<<24: id %d, prev %d (%v); want prev %d, the id before it", ev.ID, ev.Prev, err, 5<<24+1)
	}
	if id := add(a, 3<<24, "stale floor"); id != 7<<24+1 {
		t.Fatalf("a floor below the head gave %d, want %d", id, 7<<24+1)
	}
	page, err := b.StreamEvents(ctx(t), sess.ID, 5<<24, 1)
	if err != nil || len(page) != 1 || string(page[0].Data) != "live" || page[0].SessionID != sess.ID {
		t.Fatalf("page after 5<<24, limit 1: %+v %v", page, err)
	}
	if err := a.AppendStreamEvent(ctx(t), &store.StreamEvent{SessionID: "nope", Type: "x"}, 0); store.KindOf(err) != store.KindNotFound {
		t.Fatalf("append to an unknown session: %v, want not found", err)
	}
	if err := a.DeleteSession(ctx(t), sess.ID); err != nil {
		t.Fatal(err)
	}
	if evs, err := b.StreamEvents(ctx(t), sess.ID, 0, 0); err != nil || len(evs) != 0 {
		t.Fatalf("events of a deleted session: %d, %v", len(evs), err)
	}
}

// WatchStreamEvents on one node wakes for events another node stores.
func testStreamWatch(t *testing.T, a, b ClusterStore) {
	sess := newSession(t, a)
	wctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	got := make(chan string, 16)
	done := make(chan error, 1)
	go func() {
		done <- b.WatchStreamEvents(wctx, func(id string) { got <- id })
	}()
	select {
	case id := <-got:
		if id != "" {
			t.Fatalf("first call %q, want \"\" (listening)", id)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("watch did not start")
	}
	if err := a.AppendStreamEvent(ctx(t), &store.StreamEvent{SessionID: sess.ID, Type: "status"}, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-got:
		if id != sess.ID {
			t.Fatalf("woken for %q, want %s", id, sess.ID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no wake-up for another node's event")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("watch did not end with its context")
	}
}

func testStreamPrune(t *testing.T, a, b ClusterStore) {
	sess := newSession(t, a)
	for range 3 {
		if err := a.AppendStreamEvent(ctx(t), &store.StreamEvent{SessionID: sess.ID, Type: "x"}, 0); err != nil {
			t.Fatal(err)
		}
	}
	last, _ := a.LastStreamEventID(ctx(t), sess.ID)
	n, err := b.PruneStreamEvents(ctx(t), time.Now().Add(time.Minute))
	if err != nil || n != 3 {
		t.Fatalf("pruned %d, %v; want 3", n, err)
	}
	// Ids keep growing after a prune.
	ev := &store.StreamEvent{SessionID: sess.ID, Type: "x"}
	if err := a.AppendStreamEvent(ctx(t), ev, 0); err != nil || ev.ID <= last {
		t.Fatalf("after prune: id %d (%v), want > %d", ev.ID, err, last)
	}
}
