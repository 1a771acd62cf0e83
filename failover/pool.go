package failover

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/talaria-agent/talaria/store"
)

// Strategy chooses among the credentials that are not cooling down.
type Strategy string

// Credential selection strategies.
const (
	// StrategyFillFirst uses the first usable key until it fails (the
	// default: it keeps a provider's prompt cache on one key).
	StrategyFillFirst Strategy = "fill-first"
	// StrategyRoundRobin cycles through the usable keys.
	StrategyRoundRobin Strategy = "round-robin"
	// StrategyLeastUsed picks the usable key picked least often.
	StrategyLeastUsed Strategy = "least-used"
)

// Credential is one API key of a provider.
type Credential struct {
	Key string
	// ID is a fingerprint, the first 8 hex digits of sha256(Key): safe to
	// log and persist, never the key itself.
	ID string
	// Label names the key for people, e.g. "key 2 of 3".
	Label string
}

// String never prints the key.
func (c Credential) String() string { return c.Label + " [" + c.ID + "]" }

// KeyID returns the fingerprint of key used as Credential.ID.
func KeyID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:4])
}

// CooldownStore persists cooldowns; store.Store implements it.
type CooldownStore interface {
	SetCooldown(ctx context.Context, c store.Cooldown) error
	Cooldowns(ctx context.Context, provider string, now time.Time) ([]store.Cooldown, error)
	ClearCooldown(ctx context.Context, provider, keyID string) error
}

// Cooldown durations.
const (
	CooldownAuth              = 5 * time.Minute
	CooldownBilling           = time.Hour
	CooldownBillingUnverified = 2 * time.Minute
	CooldownRateLimit         = time.Hour
)

// ReasonBillingUnverified is the cooldown reason of an unverified billing
// failure, persisted so that a restart cannot turn it into a full bench.
const ReasonBillingUnverified = "billing_unverified"

// ErrNoCredentials is returned by Pick for a pool without keys.
var ErrNoCredentials = errors.New("no API keys configured")

// AllCoolingDownError says every key of a provider is benched.
type AllCoolingDownError struct {
	Provider string
	Until    time.Time // the earliest time a key returns
	Reason   string    // the failure class that benched that key
	SetAt    time.Time // when that key was benched (zero if unknown)
}

// Error names the provider, the reason and when the first key returns.
func (e *AllCoolingDownError) Error() string {
	return fmt.Sprintf("every API key for %s is cooling down after %s failures; the first is usable again at %s",
		e.Provider, e.Reason, e.Until.Local().Format(time.DateTime))
}

// Pool hands out a provider's credentials and benches failing ones. It is
// safe for concurrent use.
type Pool struct {
	provider string
	baseURL  string // the endpoint cooldowns are scoped to (ForEndpoint)
	creds    []Credential
	strategy Strategy
	cs       CooldownStore
	now      func() time.Time
	log      *slog.Logger

	mu      sync.Mutex
	next    int                       // round-robin cursor
	picks   map[string]int64          // picks per key ID, for least-used
	strikes map[string]int            // consecutive rate-limit failures per key ID
	benched map[string]store.Cooldown // known cooldowns: set here or loaded from cs
	unsaved map[string]bool           // benched here but not persisted (the store write failed)
}

// NewPool builds a pool for provider's keys (duplicates dropped). cs may be
// nil for memory-only cooldowns; now nil means time.Now; an unknown
// strategy means fill-first.
func NewPool(provider string, keys []string, strategy Strategy, cs CooldownStore, now func() time.Time) *Pool {
	if now == nil {
		now = time.Now
	}
	switch strategy {
	case StrategyRoundRobin, StrategyLeastUsed:
	default:
		strategy = StrategyFillFirst
	}
	p := &Pool{
		provider: provider, strategy: strategy, cs: cs, now: now, log: slog.New(slog.DiscardHandler),
		picks: map[string]int64{}, strikes: map[string]int{}, benched: map[string]store.Cooldown{},
		unsaved: map[string]bool{},
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if k == "" || seen[k] {
			continue
		}
		seen[k] = true
		p.creds = append(p.creds, Credential{Key: k, ID: KeyID(k)})
	}
	for i := range p.creds {
		p.creds[i].Label = fmt.Sprintf("key %d of %d", i+1, len(p.creds))
	}
	return p
}

// ForEndpoint scopes the pool's cooldowns to one endpoint: a key benched
// at one base URL stays usable at another, so one local server's 401 never
// benches the next server that also goes by provider "custom". Call it
// before the pool is used; it returns p.
func (p *Pool) ForEndpoint(baseURL string) *Pool {
	p.baseURL = strings.TrimRight(strings.TrimSpace(baseURL), "/")
	return p
}

// WithLogger makes the pool log through l (nil: nowhere, the default): an
// unreadable cooldown store is a warning there. Call it before the pool is
// used; it returns p.
func (p *Pool) WithLogger(l *slog.Logger) *Pool {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	p.log = l
	return p
}

// Endpoint is the base URL cooldowns are scoped to ("" for none).
func (p *Pool) Endpoint() string { return p.baseURL }

// Len is the number of distinct keys.
func (p *Pool) Len() int { return len(p.creds) }

// Provider is the provider the pool serves.
func (p *Pool) Provider() string { return p.provider }

// Pick returns the credential to use next, skipping keys that are cooling
// down (cooldowns persisted by other processes included). With every key
// cooling down it returns an *AllCoolingDownError naming the earliest
// return. If the cooldown store cannot be read, Pick goes on with the
// cooldowns it already knows rather than failing the call.
func (p *Pool) Pick(ctx context.Context) (Credential, error) {
	if err := ctx.Err(); err != nil {
		return Credential{}, err
	}
	if len(p.creds) == 0 {
		return Credential{}, fmt.Errorf("%s: %w", p.provider, ErrNoCredentials)
	}
	now := p.now()
	var loaded []store.Cooldown
	var loadErr error
	if p.cs != nil {
		loaded, loadErr = p.cs.Cooldowns(ctx, p.provider, now)
		if loadErr != nil {
			if ctx.Err() != nil {
				return Credential{}, ctx.Err()
			}
			p.log.Warn("credential cooldowns unreadable; using those known in memory",
				"provider", p.provider, "err", loadErr)
		}
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cs != nil && loadErr == nil {
		// The store is the truth (a cooldown cleared elsewhere ends here
		// too), except for benches it failed to record.
		fresh := map[string]store.Cooldown{}
		for id := range p.unsaved {
			if b, ok := p.benched[id]; ok && b.Until.After(now) {
				fresh[id] = b
			} else {
				delete(p.unsaved, id)
			}
		}
		p.benched = fresh
	}
	for _, c := range loaded {
		if c.BaseURL != p.baseURL {
			continue // another endpoint's bench
		}
		if old, ok := p.benched[c.KeyID]; !ok || c.Until.After(old.Until) {
			p.benched[c.KeyID] = c
		}
	}
	usable := p.usableLocked(now)
	if len(usable) == 0 {
		return Credential{}, p.allCoolingLocked()
	}
	i := p.chooseLocked(usable)
	p.picks[p.creds[i].ID]++
	return p.creds[i], nil
}

// usableLocked lists the indexes of keys not cooling down at now.
func (p *Pool) usableLocked(now time.Time) []int {
	var out []int
	for i, c := range p.creds {
		if b, ok := p.benched[c.ID]; ok && b.Until.After(now) {
			continue
		}
		out = append(out, i)
	}
	return out
}

func (p *Pool) chooseLocked(usable []int) int {
	switch p.strategy {
	case StrategyRoundRobin:
		for _, i := range usable {
			if i >= p.next {
				p.next = i + 1
				return i
			}
		}
		p.next = usable[0] + 1
		return usable[0]
	case StrategyLeastUsed:
		best := usable[0]
		for _, i := range usable[1:] {
			if p.picks[p.creds[i].ID] < p.picks[p.creds[best].ID] {
				best = i
			}
		}
		return best
	}
	return usable[0]
}

func (p *Pool) allCoolingLocked() *AllCoolingDownError {
	e := &AllCoolingDownError{Provider: p.provider}
	for _, c := range p.creds {
		b := p.benched[c.ID]
		if e.Until.IsZero() || b.Until.Before(e.Until) {
			e.Until, e.Reason, e.SetAt = b.Until, b.Reason, b.SetAt
		}
	}
	return e
}

// Failed records a failure of cred and reports whether the caller should
// switch to another key now; rotate is false when no other key is usable.
// Rules: auth and billing rotate at once; a rate limit retries the same key
// once, then rotates. Benched keys get a persisted cooldown: billing 1h
// (unverified billing 2 min), rate limit until ResetAt, else RetryAfter,
// else 1h, auth 5 min. Overload, server and request errors do not bench a
// key, and neither does an upstream rate limit (the key is fine).
//
// A sole key is not benched for a rate limit with no stated reset: with
// nowhere to rotate to, an hour's bench would only lock out the next turns
// while the retry loop's back-off already handles the wait.
func (p *Pool) Failed(ctx context.Context, cred Credential, c Classified) (rotate bool, err error) {
	now := p.now()
	id := cred.ID
	if id == "" {
		id = KeyID(cred.Key)
	}
	var cool time.Duration
	reason := string(c.Class)

	p.mu.Lock()
	switch c.Class {
	case ClassAuth, ClassAuthPermanent:
		cool = CooldownAuth
	case ClassBilling:
		cool = CooldownBilling
		if c.BillingUnverified {
			// A content filter fails the same way on every key and leaves
			// the key healthy: bench briefly, whatever the pool size.
			cool, reason = CooldownBillingUnverified, ReasonBillingUnverified
		}
	case ClassRateLimit:
		p.strikes[id]++
		if p.strikes[id] >= 2 {
			cool = CooldownRateLimit
			switch {
			case c.ResetAt.After(now):
				cool = c.ResetAt.Sub(now)
			case c.RetryAfter > 0:
				cool = c.RetryAfter
			case len(p.creds) == 1:
				cool = 0
			}
		}
	}
	until := now.Add(cool)
	if cool > 0 {
		p.strikes[id] = 0
		p.benched[id] = store.Cooldown{Provider: p.provider, BaseURL: p.baseURL, KeyID: id, Until: until, Reason: reason, SetAt: now}
	}
	rotateRule := c.Class == ClassAuth || c.Class == ClassAuthPermanent || c.Class == ClassBilling ||
		(c.Class == ClassRateLimit && cool > 0)
	other := false
	for _, i := range p.usableLocked(now) {
		if p.creds[i].ID != id {
			other = true
			break
		}
	}
	p.mu.Unlock()

	if cool > 0 && p.cs != nil {
		err = p.cs.SetCooldown(ctx, store.Cooldown{Provider: p.provider, BaseURL: p.baseURL, KeyID: id, Until: until, Reason: reason, SetAt: now})
		p.mu.Lock()
		if err != nil {
			p.unsaved[id] = true
		} else {
			delete(p.unsaved, id)
		}
		p.mu.Unlock()
		if err != nil {
			err = fmt.Errorf("persist cooldown of %s key %s: %w", p.provider, id, err)
		}
	}
	return rotateRule && other, err
}

// Bench returns the cooldown cred is under now, if any: what a failure
// that benched it tells the person (until when, and for how long).
func (p *Pool) Bench(cred Credential) (store.Cooldown, bool) {
	id := cred.ID
	if id == "" {
		id = KeyID(cred.Key)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.benched[id]
	if !ok || !b.Until.After(p.now()) {
		return store.Cooldown{}, false
	}
	return b, true
}

// Succeeded records a success of cred: its rate-limit strikes reset.
func (p *Pool) Succeeded(cred Credential) {
	id := cred.ID
	if id == "" {
		id = KeyID(cred.Key)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.strikes, id)
}

// ClearCooldowns ends every cooldown of this pool's keys, in memory and in
// the store (`talaria auth reset`: after fixing billing, a bench should not
// make the fix look ineffective).
func (p *Pool) ClearCooldowns(ctx context.Context) error {
	p.mu.Lock()
	p.benched = map[string]store.Cooldown{}
	p.strikes = map[string]int{}
	p.unsaved = map[string]bool{}
	p.mu.Unlock()
	if p.cs == nil {
		return nil
	}
	var errs []error
	for _, c := range p.creds {
		if err := p.cs.ClearCooldown(ctx, p.provider, c.ID); err != nil {
			errs = append(errs, fmt.Errorf("clear cooldown of %s key %s: %w", p.provider, c.ID, err))
		}
	}
	return errors.Join(errs...)
}

// SplitKeys splits a comma-separated environment value into keys, trimmed,
// empties dropped.
func SplitKeys(s string) []string {
	var out []string
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}
