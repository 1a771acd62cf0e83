package compact

import (
	"github.com/talaria-agent/talaria/catalogue"
	"github.com/talaria-agent/talaria/internal/setting"
)

// DefaultRatio is the share of the window at which compression triggers.
const DefaultRatio = 0.5

// DefaultAttempts is the number of compression passes a turn may make.
const DefaultAttempts = 3

// Threshold is the prompt size at which compression triggers: Tokens when
// positive, else Ratio (DefaultRatio when not positive) of the window.
type Threshold struct {
	// Ratio is the share of the window (0 < Ratio ≤ 1).
	Ratio float64
	// Tokens, when positive, is an absolute trigger size.
	Tokens int
}

// Limit returns the trigger size for a model with the given window
// (catalogue.UnknownWindow when window is not positive). The result never exceeds the
// window, since a trigger above it could only fire after an overflow.
func (t Threshold) Limit(window int) int {
	window = setting.Or(window, catalogue.UnknownWindow)
	if t.Tokens > 0 {
		return min(t.Tokens, window)
	}
	r := t.Ratio
	r = setting.Or(r, DefaultRatio)
	if r > 1 {
		r = 1
	}
	return int(float64(window) * r)
}

// For returns the trigger for model m: m's own (config
// models.NAME.compression_threshold or compression_threshold_tokens) when it
// has one, else t, the global one.
func (t Threshold) For(m catalogue.Model) Threshold {
	if own := (Threshold{Ratio: m.CompressionRatio, Tokens: m.CompressionTokens}); own != (Threshold{}) {
		return own
	}
	return t
}

// RefundLimit is the prompt size under which a provider-reported count
// proves compression pressure gone (80% of Limit), the seed's condition for
// Budget.Refund: far enough below the trigger that a no-progress pass never
// reaches it.
func (t Threshold) RefundLimit(window int) int {
	return t.Limit(window) * 4 / 5
}

// Budget bounds the compression passes of one turn. Each pass Spends an
// attempt; a pass that made no progress Blocks further passes; Refund gives
// the attempts back once the provider confirms the prompt is well under the
// threshold again, so a long tool turn whose compressions all succeeded does
// not run dry; a fallback switch Resets it.
//
// The zero value allows DefaultAttempts passes. A Budget is not safe for
// concurrent use; it belongs to one turn's state.
type Budget struct {
	max     int
	used    int
	blocked bool
}

// NewBudget returns a budget of attempts passes (DefaultAttempts when not
// positive).
func NewBudget(attempts int) *Budget {
	return &Budget{max: attempts}
}

func (b *Budget) limit() int {
	if b.max <= 0 {
		return DefaultAttempts
	}
	return b.max
}

// Allow reports whether another pass may run: attempts are left and no pass
// has been judged to make no progress.
func (b *Budget) Allow() bool { return !b.blocked && b.used < b.limit() }

// Spend records one pass.
func (b *Budget) Spend() { b.used++ }

// Refund gives all attempts back and clears the no-progress block. The
// caller decides when: the seed's rule is when the provider reports the
// prompt back under threshold×0.8. The block goes too, because the verdict
// described a request that no longer exists.
func (b *Budget) Refund() { b.Reset() }

// Block stops further passes this turn (until Refund or Reset): the last
// pass made no progress, so another would only thrash.
func (b *Budget) Block() { b.blocked = true }

// Reset restores the full budget; a fallback switch calls it, since the new
// model has its own window.
func (b *Budget) Reset() {
	b.used = 0
	b.blocked = false
}

// Used returns the passes spent since the last Refund or Reset.
func (b *Budget) Used() int { return b.used }

// Left returns the passes still allowed (0 while blocked).
func (b *Budget) Left() int {
	if b.blocked {
		return 0
	}
	return max(b.limit()-b.used, 0)
}

// Blocked reports whether a no-progress verdict stops further passes.
func (b *Budget) Blocked() bool { return b.blocked }
