package failover

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func fixedJitter(v float64) func() float64 { return func() float64 { return v } }

func TestBackoffHonoursCappedHint(t *testing.T) {
	b := Backoff{Jitter: fixedJitter(0)}
	tests := []struct {
		name  string
		b     Backoff
		hint  time.Duration
		want  time.Duration
		tries int
	}{
		{"hint below cap is used as is", b, 7 * time.Second, 7 * time.Second, 1},
		{"hint wins over exponential growth", b, 3 * time.Second, 3 * time.Second, 6},
		{"hint above default cap is capped at 120s", b, 10 * time.Minute, 120 * time.Second, 1},
		{"custom cap", Backoff{RetryAfterCap: 30 * time.Second, Jitter: fixedJitter(0)}, time.Hour, 30 * time.Second, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.b.Delay(tt.tries, Classified{RetryAfter: tt.hint})
			if got != tt.want {
				t.Errorf("Delay = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBackoffExponentialWithFixedJitter(t *testing.T) {
	// Equal jitter: half the step fixed, half scaled by Jitter. With 0.5 the
	// delay is 3/4 of the step: 2s base doubles until the 60s ceiling.
	b := Backoff{Base: 2 * time.Second, Max: 60 * time.Second, Jitter: fixedJitter(0.5)}
	want := []time.Duration{
		1500 * time.Millisecond, // step 2s
		3 * time.Second,         // 4s
		6 * time.Second,         // 8s
		12 * time.Second,        // 16s
		24 * time.Second,        // 32s
		45 * time.Second,        // 64s capped to 60s
		45 * time.Second,
	}
	for i, w := range want {
		if got := b.Delay(i+1, Classified{}); got != w {
			t.Errorf("attempt %d: Delay = %v, want %v", i+1, got, w)
		}
	}
}

func TestBackoffBounds(t *testing.T) {
	tests := []struct {
		name    string
		b       Backoff
		attempt int
		lo, hi  time.Duration
	}{
		{"zero value takes defaults", Backoff{Jitter: fixedJitter(0)}, 1, time.Second, time.Second},
		{"jitter near 1 reaches the full step", Backoff{Jitter: fixedJitter(0.999999)}, 1, 1999 * time.Millisecond, 2 * time.Second},
		{"huge attempt stays at Max, no overflow", Backoff{Jitter: fixedJitter(0.999999)}, 1 << 20, 59 * time.Second, 60 * time.Second},
		{"attempt 0 is treated as the first", Backoff{Jitter: fixedJitter(0)}, 0, time.Second, time.Second},
		{"out-of-range jitter is ignored", Backoff{Jitter: fixedJitter(7)}, 1, time.Second, time.Second},
		{"Max below Base is raised to Base", Backoff{Base: 10 * time.Second, Max: time.Second, Jitter: fixedJitter(0)}, 3, 5 * time.Second, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.b.Delay(tt.attempt, Classified{})
			if got < tt.lo || got > tt.hi {
				t.Errorf("Delay = %v, want within [%v, %v]", got, tt.lo, tt.hi)
			}
		})
	}
}

func TestBackoffRandomJitterStaysInRange(t *testing.T) {
	b := DefaultBackoff() // real math/rand/v2 jitter
	for attempt := 1; attempt <= 8; attempt++ {
		step := min(DefaultBase<<(attempt-1), DefaultMax)
		for range 50 {
			d := b.Delay(attempt, Classified{})
			if d < step/2 || d > step {
				t.Fatalf("attempt %d: Delay = %v, want within [%v, %v]", attempt, d, step/2, step)
			}
		}
	}
}

// TestSleep runs in a synctest bubble: the clock is fake, so the waits are
// measured exactly and take no real time.
func TestSleep(t *testing.T) {
	t.Run("waits the whole duration", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			if err := Sleep(t.Context(), 30*time.Second); err != nil {
				t.Errorf("Sleep = %v, want nil", err)
			}
			if got := time.Since(start); got != 30*time.Second {
				t.Errorf("Sleep took %v, want 30s", got)
			}
		})
	})
	t.Run("returns at the cancel during a long wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(10*time.Second, cancel)
			start := time.Now()
			if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
				t.Errorf("Sleep = %v, want context.Canceled", err)
			}
			if got := time.Since(start); got != 10*time.Second {
				t.Errorf("Sleep returned after %v, want 10s (at the cancel)", got)
			}
		})
	})
	t.Run("already canceled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			start := time.Now()
			if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) || time.Since(start) != 0 {
				t.Errorf("Sleep = %v after %v, want context.Canceled at once", err, time.Since(start))
			}
		})
	})
	t.Run("non-positive duration", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			if err := Sleep(t.Context(), 0); err != nil || time.Since(start) != 0 {
				t.Errorf("Sleep(0) = %v after %v, want nil at once", err, time.Since(start))
			}
		})
	})
}
