package failover

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/talaria-agent/talaria/internal/setting"
)

// Backoff computes the wait before a retry. Zero fields take the defaults
// of DefaultBackoff.
type Backoff struct {
	Base          time.Duration  // default 2s
	Max           time.Duration  // default 60s
	RetryAfterCap time.Duration  // default 120s: a provider hint longer than this is capped
	Jitter        func() float64 // returns [0,1); nil → math/rand/v2
}

// Backoff defaults.
const (
	DefaultBase          = 2 * time.Second
	DefaultMax           = 60 * time.Second
	DefaultRetryAfterCap = 120 * time.Second
)

// DefaultBackoff returns the default policy: 2s base, 60s ceiling, provider
// hints capped at 120s.
func DefaultBackoff() Backoff {
	return Backoff{Base: DefaultBase, Max: DefaultMax, RetryAfterCap: DefaultRetryAfterCap}
}

// Delay is the wait before retry number attempt (1-based). A provider hint
// (c.RetryAfter) wins, capped at RetryAfterCap. Otherwise the delay is the
// exponential step Base*2^(attempt-1), capped at Max, with equal jitter: half
// the step fixed and half random, so waits still grow with each attempt
// while clients that failed together spread out.
func (b Backoff) Delay(attempt int, c Classified) time.Duration {
	b = b.withDefaults()
	if c.RetryAfter > 0 {
		return min(c.RetryAfter, b.RetryAfterCap)
	}
	if attempt < 1 {
		attempt = 1
	}
	step := b.Max
	// Stop doubling once past Max; this also keeps the shift from
	// overflowing for large attempt numbers.
	if shift := attempt - 1; shift < 62 && b.Base <= b.Max>>shift {
		step = b.Base << shift
	}
	j := b.Jitter()
	if j < 0 || j >= 1 {
		j = 0
	}
	half := step / 2
	return half + time.Duration(j*float64(step-half))
}

func (b Backoff) withDefaults() Backoff {
	b.Base = setting.Or(b.Base, DefaultBase)
	b.Max = setting.Or(b.Max, DefaultMax)
	if b.Max < b.Base {
		b.Max = b.Base
	}
	b.RetryAfterCap = setting.Or(b.RetryAfterCap, DefaultRetryAfterCap)
	if b.Jitter == nil {
		b.Jitter = rand.Float64
	}
	return b
}

// Sleep waits d, or until ctx ends, in which case it returns ctx.Err() at
// once.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
