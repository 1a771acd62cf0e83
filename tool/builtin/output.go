package builtin

import (
	"fmt"
	"sync"

	"github.com/talaria-agent/talaria/internal/textcut"
)

const elisionFormat = "\n[… %d bytes of output omitted …]\n"

// capText keeps s within limit bytes: the head and the tail survive, the
// middle is replaced by a marker that says how much was cut.
func capText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	return joinCut(s, s, len(s), limit)
}

// joinCut renders the start of head and the end of tail, which came from a
// text of total bytes, within limit bytes with an elision marker between.
// Cuts fall on rune boundaries.
func joinCut(head, tail string, total, limit int) string {
	// Size the marker for the largest number it could report, so the real
	// one always fits.
	budget := max(limit-len(fmt.Sprintf(elisionFormat, total)), 0)
	h := textcut.Prefix(head, budget/2)
	t := textcut.Suffix(tail, budget-len(h))
	return h + fmt.Sprintf(elisionFormat, total-len(h)-len(t)) + t
}

// headTail is an io.Writer that keeps the first and last bytes of an
// unbounded stream, so a noisy command cannot exhaust memory.
type headTail struct {
	mu    sync.Mutex
	half  int
	head  []byte
	tail  []byte
	total int
}

func newHeadTail(limit int) *headTail { return &headTail{half: max(limit/2, 1)} }

func (w *headTail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	w.total += n
	if room := w.half - len(w.head); room > 0 {
		k := min(room, len(p))
		w.head = append(w.head, p[:k]...)
		p = p[k:]
	}
	w.tail = append(w.tail, p...)
	if len(w.tail) > 2*w.half { // trim amortized, not on every write
		w.tail = append(w.tail[:0], w.tail[len(w.tail)-w.half:]...)
	}
	return n, nil
}

// String returns the captured text within limit bytes.
func (w *headTail) String(limit int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.head)+len(w.tail) == w.total {
		return capText(string(w.head)+string(w.tail), limit)
	}
	return joinCut(string(w.head), string(w.tail), w.total, limit)
}
