package failover

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/store"
)

// memCooldowns is an in-memory CooldownStore with store.Cooldowns'
// semantics: one row per (provider, key), listed while Until is after now.
type memCooldowns struct {
	mu       sync.Mutex
	rows     map[string]store.Cooldown
	readErr  error
	writeErr error
	sets     int
}

func newMemCooldowns() *memCooldowns { return &memCooldowns{rows: map[string]store.Cooldown{}} }

func (m *memCooldowns) SetCooldown(_ context.Context, c store.Cooldown) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.writeErr != nil {
		return m.writeErr
	}
	m.sets++
	m.rows[c.Provider+"/"+c.KeyID] = c
	return nil
}

func (m *memCooldowns) Cooldowns(_ context.Context, provider string, now time.Time) ([]store.Cooldown, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.readErr != nil {
		return nil, m.readErr
	}
	var out []store.Cooldown
	for _, c := range m.rows {
		if c.Provider == provider && c.Until.After(now) {
			out = append(out, c)
		}
	}
	return out, nil
}

func (m *memCooldowns) ClearCooldown(_ context.Context, provider, keyID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.rows, provider+"/"+keyID)
	return nil
}

func (m *memCooldowns) row(provider, keyID string) (store.Cooldown, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.rows[provider+"/"+keyID]
	return c, ok
}

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newClock() *clock { return &clock{t: testNow()} }

var threeKeys = []string{"sk-one", "sk-two", "sk-three"}

func pickN(t *testing.T, p *Pool, n int) []string {
	t.Helper()
	var labels []string
	for range n {
		c, err := p.Pick(context.Background())
		if err != nil {
			t.Fatalf("Pick: %v", err)
		}
		labels = append(labels, c.Label)
	}
	return labels
}

func TestPoolStrategies(t *testing.T) {
	tests := []struct {
		name     string
		strategy Strategy
		bench    []int // key indexes benched (billing) before picking
		want     []string
	}{
		{"fill-first sticks to the first key", StrategyFillFirst, nil,
			[]string{"key 1 of 3", "key 1 of 3", "key 1 of 3"}},
		{"unknown strategy means fill-first", Strategy("bogus"), nil,
			[]string{"key 1 of 3", "key 1 of 3"}},
		{"fill-first skips a benched key", StrategyFillFirst, []int{0},
			[]string{"key 2 of 3", "key 2 of 3"}},
		{"round-robin cycles", StrategyRoundRobin, nil,
			[]string{"key 1 of 3", "key 2 of 3", "key 3 of 3", "key 1 of 3"}},
		{"round-robin skips a benched key", StrategyRoundRobin, []int{1},
			[]string{"key 1 of 3", "key 3 of 3", "key 1 of 3", "key 3 of 3"}},
		{"least-used spreads picks", StrategyLeastUsed, nil,
			[]string{"key 1 of 3", "key 2 of 3", "key 3 of 3", "key 1 of 3", "key 2 of 3"}},
		{"least-used skips a benched key", StrategyLeastUsed, []int{0},
			[]string{"key 2 of 3", "key 3 of 3", "key 2 of 3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			p := NewPool("openai", threeKeys, tt.strategy, newMemCooldowns(), clk.now)
			for _, i := range tt.bench {
				cred := p.creds[i]
				if _, err := p.Failed(context.Background(), cred, Classified{Class: ClassBilling}); err != nil {
					t.Fatal(err)
				}
			}
			got := pickN(t, p, len(tt.want))
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("picks = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPoolFailedRules(t *testing.T) {
	now := testNow()
	tests := []struct {
		name       string
		keys       []string
		failures   []Classified // applied in order to key 1
		wantRotate bool         // answer to the last failure
		wantCool   time.Duration
		wantReason string
	}{
		{name: "auth rotates at once, 5 min", keys: threeKeys,
			failures: []Classified{{Class: ClassAuth}}, wantRotate: true, wantCool: 5 * time.Minute, wantReason: "auth"},
		{name: "billing rotates at once, 1 h", keys: threeKeys,
			failures: []Classified{{Class: ClassBilling}}, wantRotate: true, wantCool: time.Hour, wantReason: "billing"},
		{name: "unverified billing gets a short bench", keys: threeKeys,
			failures:   []Classified{{Class: ClassBilling, BillingUnverified: true}},
			wantRotate: true, wantCool: 2 * time.Minute, wantReason: ReasonBillingUnverified},
		{name: "unverified billing is short even for a sole key", keys: []string{"sk-only"},
			failures:   []Classified{{Class: ClassBilling, BillingUnverified: true}},
			wantRotate: false, wantCool: 2 * time.Minute, wantReason: ReasonBillingUnverified},
		{name: "first rate limit retries the same key", keys: threeKeys,
			failures: []Classified{{Class: ClassRateLimit}}, wantRotate: false},
		{name: "second rate limit rotates, 1 h without a reset", keys: threeKeys,
			failures:   []Classified{{Class: ClassRateLimit}, {Class: ClassRateLimit}},
			wantRotate: true, wantCool: time.Hour, wantReason: "rate_limit"},
		{name: "rate limit benches until ResetAt", keys: threeKeys,
			failures:   []Classified{{Class: ClassRateLimit}, {Class: ClassRateLimit, ResetAt: now.Add(90 * time.Second)}},
			wantRotate: true, wantCool: 90 * time.Second, wantReason: "rate_limit"},
		{name: "rate limit benches for RetryAfter without ResetAt", keys: threeKeys,
			failures:   []Classified{{Class: ClassRateLimit}, {Class: ClassRateLimit, RetryAfter: 20 * time.Second}},
			wantRotate: true, wantCool: 20 * time.Second, wantReason: "rate_limit"},
		{name: "sole key is not benched for a rate limit without a reset", keys: []string{"sk-only"},
			failures: []Classified{{Class: ClassRateLimit}, {Class: ClassRateLimit}}, wantRotate: false},
		{name: "sole key is benched until a stated reset", keys: []string{"sk-only"},
			failures:   []Classified{{Class: ClassRateLimit}, {Class: ClassRateLimit, ResetAt: now.Add(time.Minute)}},
			wantRotate: false, wantCool: time.Minute, wantReason: "rate_limit"},
		{name: "billing on a sole key benches but cannot rotate", keys: []string{"sk-only"},
			failures: []Classified{{Class: ClassBilling}}, wantRotate: false, wantCool: time.Hour, wantReason: "billing"},
		{name: "overload does not bench", keys: threeKeys,
			failures: []Classified{{Class: ClassOverloaded}, {Class: ClassOverloaded}}, wantRotate: false},
		{name: "server error does not bench", keys: threeKeys,
			failures: []Classified{{Class: ClassServerError}}, wantRotate: false},
		{name: "upstream rate limit leaves the key alone", keys: threeKeys,
			failures: []Classified{{Class: ClassUpstreamRateLimit}, {Class: ClassUpstreamRateLimit}}, wantRotate: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := newMemCooldowns()
			clk := newClock()
			p := NewPool("openai", tt.keys, StrategyFillFirst, cs, clk.now)
			cred, err := p.Pick(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var rotate bool
			for _, f := range tt.failures {
				if rotate, err = p.Failed(context.Background(), cred, f); err != nil {
					t.Fatal(err)
				}
			}
			if rotate != tt.wantRotate {
				t.Errorf("rotate = %v, want %v", rotate, tt.wantRotate)
			}
			row, ok := cs.row("openai", cred.ID)
			if tt.wantCool == 0 {
				if ok {
					t.Errorf("key benched until %v (%s), want no cooldown", row.Until, row.Reason)
				}
				return
			}
			if !ok {
				t.Fatalf("no cooldown persisted, want %v", tt.wantCool)
			}
			if got := row.Until.Sub(now); got != tt.wantCool {
				t.Errorf("cooldown = %v, want %v", got, tt.wantCool)
			}
			if row.Reason != tt.wantReason || row.KeyID != cred.ID || row.Provider != "openai" {
				t.Errorf("row = %+v, want reason %q for key %s", row, tt.wantReason, cred.ID)
			}
		})
	}
}

func TestPoolSucceededResetsRateLimitStrikes(t *testing.T) {
	p := NewPool("openai", threeKeys, StrategyFillFirst, nil, newClock().now)
	cred, _ := p.Pick(context.Background())
	ctx := context.Background()
	if rot, _ := p.Failed(ctx, cred, Classified{Class: ClassRateLimit}); rot {
		t.Fatal("first rate limit must not rotate")
	}
	p.Succeeded(cred)
	if rot, _ := p.Failed(ctx, cred, Classified{Class: ClassRateLimit}); rot {
		t.Error("a success in between must reset the strike count")
	}
	if rot, _ := p.Failed(ctx, cred, Classified{Class: ClassRateLimit}); !rot {
		t.Error("two consecutive rate limits must rotate")
	}
}

func TestPoolCooldownsPersistAcrossPools(t *testing.T) {
	cs := newMemCooldowns()
	clk := newClock()
	ctx := context.Background()
	first := NewPool("anthropic", threeKeys, StrategyFillFirst, cs, clk.now)
	cred, _ := first.Pick(ctx)
	if _, err := first.Failed(ctx, cred, Classified{Class: ClassBilling}); err != nil {
		t.Fatal(err)
	}

	// A second process (a new Pool over the same store) must skip the key.
	second := NewPool("anthropic", threeKeys, StrategyFillFirst, cs, clk.now)
	got, err := second.Pick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID == cred.ID {
		t.Fatalf("second pool picked the benched key %s", got)
	}
	// Another provider's pool is unaffected by the cooldown.
	other := NewPool("openai", threeKeys, StrategyFillFirst, cs, clk.now)
	if o, _ := other.Pick(ctx); o.ID != cred.ID {
		t.Errorf("other provider picked %s, want the first key", o)
	}

	clk.advance(time.Hour + time.Second)
	if got, _ := second.Pick(ctx); got.ID != cred.ID {
		t.Errorf("after the cooldown the first key should be back, got %s", got)
	}
}

func TestPoolUnverifiedReasonSurvivesRestart(t *testing.T) {
	cs := newMemCooldowns()
	clk := newClock()
	ctx := context.Background()
	p := NewPool("anthropic", []string{"sk-only"}, StrategyFillFirst, cs, clk.now)
	cred, _ := p.Pick(ctx)
	if _, err := p.Failed(ctx, cred, Classified{Class: ClassBilling, BillingUnverified: true}); err != nil {
		t.Fatal(err)
	}
	restarted := NewPool("anthropic", []string{"sk-only"}, StrategyFillFirst, cs, clk.now)
	_, err := restarted.Pick(ctx)
	var all *AllCoolingDownError
	if !errors.As(err, &all) {
		t.Fatalf("Pick = %v, want *AllCoolingDownError", err)
	}
	if all.Reason != ReasonBillingUnverified || !all.Until.Equal(testNow().Add(2*time.Minute)) {
		t.Errorf("restart sees %+v, want the short unverified bench", all)
	}
}

func TestPoolAllCoolingDownNamesEarliestReturn(t *testing.T) {
	cs := newMemCooldowns()
	clk := newClock()
	ctx := context.Background()
	p := NewPool("openai", []string{"sk-a", "sk-b"}, StrategyFillFirst, cs, clk.now)
	a, _ := p.Pick(ctx)
	if _, err := p.Failed(ctx, a, Classified{Class: ClassBilling}); err != nil { // 1 h
		t.Fatal(err)
	}
	b, _ := p.Pick(ctx)
	if b.ID == a.ID {
		t.Fatal("billing failure should have moved the pool to the second key")
	}
	if _, err := p.Failed(ctx, b, Classified{Class: ClassAuth}); err != nil { // 5 min
		t.Fatal(err)
	}
	_, err := p.Pick(ctx)
	var all *AllCoolingDownError
	if !errors.As(err, &all) {
		t.Fatalf("Pick = %v, want *AllCoolingDownError", err)
	}
	if all.Provider != "openai" || all.Reason != "auth" || !all.Until.Equal(testNow().Add(5*time.Minute)) {
		t.Errorf("got %+v, want the auth bench ending in 5 min", all)
	}
	if !strings.Contains(err.Error(), "openai") {
		t.Errorf("error text %q should name the provider", err)
	}
}

func TestPoolStoreFailures(t *testing.T) {
	ctx := context.Background()
	t.Run("unreadable store falls back to known cooldowns", func(t *testing.T) {
		cs := newMemCooldowns()
		var logged bytes.Buffer
		p := NewPool("openai", threeKeys, StrategyFillFirst, cs, newClock().now).
			WithLogger(slog.New(slog.NewTextHandler(&logged, nil)))
		first, _ := p.Pick(ctx)
		if _, err := p.Failed(ctx, first, Classified{Class: ClassAuth}); err != nil {
			t.Fatal(err)
		}
		cs.readErr = errors.New("database is locked")
		got, err := p.Pick(ctx)
		if err != nil {
			t.Fatalf("Pick = %v, want it to carry on without the store", err)
		}
		if got.ID == first.ID {
			t.Error("the key benched in memory must still be skipped")
		}
		// The warning goes to the caller's logger, not the global one.
		if !strings.Contains(logged.String(), "cooldowns unreadable") || !strings.Contains(logged.String(), "database is locked") {
			t.Errorf("the pool's logger got %q, want the unreadable-store warning", logged.String())
		}
	})
	t.Run("unwritable store reports the error but still rotates", func(t *testing.T) {
		cs := newMemCooldowns()
		cs.writeErr = errors.New("disk full")
		p := NewPool("openai", threeKeys, StrategyFillFirst, cs, newClock().now)
		cred, _ := p.Pick(ctx)
		rotate, err := p.Failed(ctx, cred, Classified{Class: ClassBilling})
		if !errors.Is(err, cs.writeErr) {
			t.Errorf("Failed err = %v, want it to wrap the store error", err)
		}
		if !rotate {
			t.Error("a persistence failure must not stop the rotation")
		}
		// The bench the store could not record still holds in this process.
		for range 3 {
			got, err := p.Pick(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got.ID == cred.ID {
				t.Fatal("the key whose cooldown could not be persisted was picked again")
			}
		}
	})
	t.Run("canceled context", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		p := NewPool("openai", threeKeys, StrategyFillFirst, newMemCooldowns(), nil)
		if _, err := p.Pick(cctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Pick = %v, want context.Canceled", err)
		}
	})
	t.Run("no keys", func(t *testing.T) {
		p := NewPool("openai", nil, StrategyFillFirst, nil, nil)
		if _, err := p.Pick(ctx); !errors.Is(err, ErrNoCredentials) {
			t.Errorf("Pick = %v, want ErrNoCredentials", err)
		}
	})
}

func TestPoolClearCooldowns(t *testing.T) {
	cs := newMemCooldowns()
	ctx := context.Background()
	p := NewPool("openai", []string{"sk-only"}, StrategyFillFirst, cs, newClock().now)
	cred, _ := p.Pick(ctx)
	if _, err := p.Failed(ctx, cred, Classified{Class: ClassBilling}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Pick(ctx); err == nil {
		t.Fatal("the sole key should be cooling down")
	}
	if err := p.ClearCooldowns(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Pick(ctx); err != nil {
		t.Errorf("after ClearCooldowns Pick = %v", err)
	}
	if _, ok := cs.row("openai", cred.ID); ok {
		t.Error("the persisted cooldown must be cleared too")
	}
}

func TestCredentialsNeverExposeKeys(t *testing.T) {
	p := NewPool("openai", []string{"sk-secret-1", "sk-secret-2", "sk-secret-1", ""}, StrategyFillFirst, nil, nil)
	if p.Len() != 2 {
		t.Fatalf("Len = %d, want 2 (duplicates and empties dropped)", p.Len())
	}
	for i, c := range p.creds {
		if len(c.ID) != 8 || c.ID != KeyID(c.Key) {
			t.Errorf("ID %q is not 8 hex digits of sha256(key)", c.ID)
		}
		if want := fmt.Sprintf("key %d of 2", i+1); c.Label != want {
			t.Errorf("Label = %q, want %q", c.Label, want)
		}
		if s := c.String(); strings.Contains(s, c.Key) {
			t.Errorf("String() %q leaks the key", s)
		}
	}
	// sha256("abc") = ba7816bf 8f01cfea … (FIPS 180-2 test vector).
	if got := KeyID("abc"); got != "ba7816bf" {
		t.Errorf("KeyID(abc) = %s, want ba7816bf", got)
	}
}

func TestSplitKeys(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"sk-a", []string{"sk-a"}},
		{" sk-a , sk-b ,, ", []string{"sk-a", "sk-b"}},
		{",,,", nil},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := SplitKeys(tt.in)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Errorf("SplitKeys(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestPoolConcurrentUse(t *testing.T) {
	cs := newMemCooldowns()
	p := NewPool("openai", threeKeys, StrategyRoundRobin, cs, newClock().now)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 20 {
				c, err := p.Pick(ctx)
				if err != nil {
					continue // every key may be benched by the others
				}
				switch (i + j) % 4 {
				case 0:
					p.Succeeded(c)
				case 1:
					_, _ = p.Failed(ctx, c, Classified{Class: ClassRateLimit, RetryAfter: time.Millisecond})
				default:
					_, _ = p.Failed(ctx, c, Classified{Class: ClassOverloaded})
				}
			}
		})
	}
	wg.Wait()
}
