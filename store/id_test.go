package store

import (
	"regexp"
	"sort"
	"testing"
	"time"
)

func TestNewID(t *testing.T) {
	now := time.Date(2026, 11, 29, 8, 15, 30, 0, time.FixedZone("CET", 3600))
	id := NewID(now)
	// The time part is UTC, so ids from machines in different zones sort together.
	if !regexp.MustCompile(`^20261129-071530-[0-9a-f]{12}$`).MatchString(id) {
		t.Fatalf("NewID = %q, want 20261129-071530-xxxxxxxxxxxx", id)
	}
	// 20,000 ids within one second (a busy gateway): with 48 random bits
	// the odds of any repeat are below one in a million; with the old 24
	// bits a repeat was near certain.
	seen := map[string]bool{}
	for range 20000 {
		id := NewID(now)
		if seen[id] {
			t.Fatalf("NewID repeated %q within 20000 calls", id)
		}
		seen[id] = true
	}
}

func TestNewIDSortsByTime(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var ids []string
	for _, d := range []time.Duration{0, time.Second, time.Minute, time.Hour, 24 * time.Hour, 400 * 24 * time.Hour} {
		ids = append(ids, NewID(base.Add(d)))
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatalf("ids made later do not sort later: %v", ids)
	}
}
