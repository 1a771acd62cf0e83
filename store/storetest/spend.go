package storetest

import (
	"math"
	"sync"
	"testing"

	"github.com/talaria-agent/talaria/store"
)

var spendCases = []testCase[store.SpendLedger]{
	{"AddsPerPrincipalPerDay", testSpendAdds},
	{"ConcurrentAddsAllCount", testSpendConcurrent},
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// Spend sums a principal's additions of one day; other days and other
// principals (the empty name included) are separate; nothing recorded is 0.
func testSpendAdds(t *testing.T, s store.SpendLedger) {
	c, l := ctx(t), s
	if got, err := l.Spend(c, "alice", "2026-01-02"); err != nil || got != 0 {
		t.Fatalf("Spend of nothing = %v, %v; want 0, nil", got, err)
	}
	adds := []struct {
		who, day string
		usd      float64
	}{
		{"alice", "2026-01-02", 0.25}, {"alice", "2026-01-02", 0.5}, {"alice", "2026-01-03", 2},
		{"bob", "2026-01-02", 7}, {"", "2026-01-02", 1},
	}
	for _, a := range adds {
		if err := l.AddSpend(c, a.who, a.day, a.usd); err != nil {
			t.Fatalf("AddSpend(%q, %s, %v): %v", a.who, a.day, a.usd, err)
		}
	}
	for _, w := range []struct {
		who, day string
		usd      float64
	}{
		{"alice", "2026-01-02", 0.75}, {"alice", "2026-01-03", 2}, {"bob", "2026-01-02", 7},
		{"", "2026-01-02", 1}, {"bob", "2026-01-03", 0}, {"carol", "2026-01-02", 0},
	} {
		if got, err := l.Spend(c, w.who, w.day); err != nil || !near(got, w.usd) {
			t.Errorf("Spend(%q, %s) = %v, %v; want %v", w.who, w.day, got, err, w.usd)
		}
	}
}

// Concurrent additions (as from several turns or nodes) are all counted.
func testSpendConcurrent(t *testing.T, s store.SpendLedger) {
	c, l := ctx(t), s
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- l.AddSpend(c, "alice", "2026-01-02", 0.125)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got, err := l.Spend(c, "alice", "2026-01-02"); err != nil || !near(got, n*0.125) {
		t.Fatalf("Spend after %d concurrent adds of 0.125 = %v, %v; want %v", n, got, err, n*0.125)
	}
}
