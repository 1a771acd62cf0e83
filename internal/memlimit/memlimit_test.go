package memlimit

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func env(kv ...string) func(string) string {
	return func(k string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
}

// limitAfterGC collects until the tracker has set a limit that satisfies
// ok (its cleanup runs on another goroutine after the cycle).
func limitAfterGC(t *testing.T, ok func(int64) bool) int64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		l := debug.SetMemoryLimit(-1)
		if ok(l) {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("limit %d never satisfied the check", l)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLimitFollowsLiveHeap(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	tr := Start(env())
	if tr == nil {
		t.Fatal("Start returned nil without GOMEMLIMIT or GOGC")
	}
	const big = 128 << 20
	hold := make([]byte, big)
	for i := 0; i < len(hold); i += 4096 {
		hold[i] = 1 // resident, like a request body
	}
	// Live heap ≥ big: the limit leaves at least a quarter of it above.
	l := limitAfterGC(t, func(l int64) bool { return l < math.MaxInt64 && l >= big+big/4 })
	if l > 2*big {
		t.Errorf("limit %d MB with %d MB live: not derived from the live heap", l>>20, big>>20)
	}
	runtime.KeepAlive(hold)
	hold = nil
	// Once the big object is garbage, the limit comes down with the heap.
	limitAfterGC(t, func(l int64) bool { return l < big })
	tr.Stop()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("after Stop the limit is %d, want the one before Start (%d)", got, before)
	}
	// Stopped: collections no longer move it.
	runtime.GC()
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("a collection after Stop set the limit to %d", got)
	}
}

func TestUserSettingsWin(t *testing.T) {
	for _, kv := range [][]string{{"GOMEMLIMIT", "1GiB"}, {"GOGC", "off"}, {"GOGC", "50"}} {
		t.Run(kv[0]+"="+kv[1], func(t *testing.T) {
			if tr := Start(env(kv...)); tr != nil {
				tr.Stop()
				t.Fatalf("Start tracked the heap although %s=%s", kv[0], kv[1])
			}
		})
	}
	var none *Tracker
	none.Stop() // a nil Tracker stops as a no-op
}

func TestMargin(t *testing.T) {
	tests := []struct {
		live, want uint64
	}{
		{0, MinMargin},
		{10 << 20, MinMargin},
		{64 << 20, MinMargin},
		{100 << 20, 25 << 20},
		{4 << 30, 1 << 30},
	}
	for _, tt := range tests {
		if got := Margin(tt.live); got != tt.want {
			t.Errorf("Margin(%d MB) = %d MB, want %d MB", tt.live>>20, got>>20, tt.want>>20)
		}
	}
}
