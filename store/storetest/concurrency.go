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

var concurrencyCases = []testCase[store.SessionService]{
	{"AppendsUnderOneLeaseAreContiguous", testConcurrentAppends},
	{"OneWinnerPerLease", testConcurrentAcquire},
}

func testConcurrentAppends(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	l := acquire(t, s, a.ID, "A")
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				m := text(llm.RoleUser, fmt.Sprintf("w%d-%d", w, i))
				if err := s.Append(ctx(t), l.Fence(), m); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Append: %v", err)
	}
	got := load(t, s, a.ID, store.MessageQuery{})
	if len(got) != workers*each {
		t.Fatalf("rows = %d, want %d", len(got), workers*each)
	}
	ids := map[int64]bool{}
	next := map[int]int{} // each worker's rows keep their order
	for i, m := range got {
		if m.Seq != int64(i+1) {
			t.Fatalf("row %d has Seq %d: seqs not contiguous", i, m.Seq)
		}
		if ids[m.ID] {
			t.Fatalf("duplicate ID %d", m.ID)
		}
		ids[m.ID] = true
		var w, n int
		if _, err := fmt.Sscanf(m.Text(), "w%d-%d", &w, &n); err != nil {
			t.Fatalf("row text %q: %v", m.Text(), err)
		}
		if n != next[w] {
			t.Fatalf("worker %d: row %d stored before row %d", w, n, next[w])
		}
		next[w]++
	}
}

func testConcurrentAcquire(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	if won := raceAcquire(t, a.ID, []store.SessionService{s}, 8); won != 1 {
		t.Fatalf("%d holders acquired the same lease, want 1", won)
	}
}

// raceAcquire has workers holders, spread over nodes, take the lease of
// session id at once and returns how many got it; an error other than
// LeaseHeldError fails the test.
func raceAcquire(t *testing.T, id string, nodes []store.SessionService, workers int) int {
	t.Helper()
	var wg sync.WaitGroup
	results := make(chan error, workers)
	for w := range workers {
		node := nodes[w%len(nodes)]
		wg.Go(func() {
			_, err := node.AcquireLease(ctx(t), id, fmt.Sprint("holder-", w), time.Minute)
			results <- err
		})
	}
	wg.Wait()
	close(results)
	won := 0
	for err := range results {
		var held *store.LeaseHeldError
		switch {
		case err == nil:
			won++
		case errors.As(err, &held):
		default:
			t.Fatalf("AcquireLease: %v", err)
		}
	}
	return won
}
