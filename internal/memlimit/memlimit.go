// Package memlimit keeps the Go runtime's soft memory limit a margin above
// the live heap, recomputed after every collection, for a short-lived
// process whose live heap can be large: with the default GOGC=100 alone a
// process holding 90 MB (a 50,000-message session and its request body)
// grows to ~180 MB before the next collection, and the garbage it makes on
// every call keeps it there.
//
// The limit follows the live heap (never a fixed value): a session whose
// live heap is twice as large gets a limit twice as large, so the collector
// runs at most once per margin allocated and cannot thrash; a small process
// stays under GOGC's own goal and is not affected.
package memlimit

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// MinMargin is the least room above the live heap the limit leaves. Below
// 16 MiB of live heap GOGC's own goal is the lower one. A larger minimum
// collects less often while a session loads, but a 32 MiB one left the
// limit above GOGC's goal at 10,000 messages, where the limit's
// scavenging is what kept the peak down (it rose 89 -> 93 MB instead of
// falling to 83), and cost ~8 MB more at 50,000.
const MinMargin = 16 << 20

// Margin is the room above a live heap of live bytes: a quarter of it, at
// least MinMargin.
func Margin(live uint64) uint64 { return max(live/4, MinMargin) }

// Tracker follows the live heap with the memory limit until Stop.
type Tracker struct {
	mu      sync.Mutex
	stopped bool
	prev    int64 // the limit before Start, restored by Stop
	samples []metrics.Sample
}

// Start begins following the live heap, unless the user tuned the
// collector (GOMEMLIMIT or GOGC set in getenv): then it returns nil, which
// is a Tracker whose Stop does nothing. Only one Tracker should run in a
// process: the limit is process-wide.
func Start(getenv func(string) string) *Tracker {
	if getenv("GOMEMLIMIT") != "" || getenv("GOGC") != "" {
		return nil
	}
	t := &Tracker{prev: debug.SetMemoryLimit(-1), samples: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}}
	t.arm()
	return t
}

// arm registers a cleanup on a fresh object nothing refers to, so it runs
// after the next collection: that is the hook on every GC cycle. The
// object is not tiny (16 bytes or more), which the runtime may batch with
// others and never free alone.
func (t *Tracker) arm() {
	runtime.AddCleanup(new([32]byte), func(t *Tracker) { t.collected() }, t)
}

func (t *Tracker) collected() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	debug.SetMemoryLimit(t.limit())
	t.arm()
}

// limit is the live heap plus its margin plus what the runtime holds
// besides heap objects (stacks, metadata): the memory limit counts all the
// memory the runtime has mapped and not returned, while the margin is
// meant for the heap.
func (t *Tracker) limit() int64 {
	metrics.Read(t.samples)
	v := func(i int) uint64 {
		if s := t.samples[i]; s.Value.Kind() == metrics.KindUint64 {
			return s.Value.Uint64()
		}
		return 0
	}
	live, total, released, objects, free := v(0), v(1), v(2), v(3), v(4)
	other := total - min(total, released+objects+free)
	l := live + Margin(live) + other
	if l > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(l)
}

// Stop ends the tracking and puts back the limit there was before Start.
func (t *Tracker) Stop() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		debug.SetMemoryLimit(t.prev)
	}
}
