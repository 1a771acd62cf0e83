package guard

import (
	"fmt"

	"github.com/talaria-agent/talaria/llm"
)

// Defaults of NewEmptyGuard.
const (
	DefaultEmptyRetries          = 3
	DefaultEmptyCostThresholdUSD = 0.25
)

// EmptyAttempt describes one API call that succeeded (HTTP 200) but brought
// neither text nor tool calls.
type EmptyAttempt struct {
	Provider, Model string
	Finish          llm.FinishReason
	// Usage as reported; Usage.Reported false means the provider sent none.
	Usage llm.Usage
	// EstInputCostUSD is the estimated price of the prompt that was sent;
	// meaningful only when CostKnown (pricing known and not a flat-rate
	// route).
	EstInputCostUSD float64
	CostKnown       bool
	// Included marks an attempt on a subscription route: it has no
	// per-call price, so the cost rule never cuts its retries and no
	// list-price cost is told for it.
	Included bool
}

// EmptyAction is what to do after an empty answer.
type EmptyAction int

// The empty-response guard's verdicts.
const (
	// EmptyRetry: send the same request again.
	EmptyRetry EmptyAction = iota + 1
	// EmptyFallback: the empty answer is deterministic; skip the remaining
	// retries and activate the next fallback model. With no fallback left
	// the engine gives up as for EmptyGiveUp.
	EmptyFallback
	// EmptyGiveUp: the retries are spent; end the turn and explain with
	// Summary.
	EmptyGiveUp
)

// String names the action for logs.
func (a EmptyAction) String() string {
	switch a {
	case EmptyRetry:
		return "retry"
	case EmptyFallback:
		return "fallback"
	case EmptyGiveUp:
		return "give_up"
	}
	return fmt.Sprintf("EmptyAction(%d)", int(a))
}

// emptySignature identifies where an empty answer came from; two zero-output
// empties with the same signature in a row will repeat forever.
type emptySignature struct {
	provider, model string
	finish          llm.FinishReason
}

// EmptyGuard decides about a streak of empty answers. Every retry re-sends
// the whole prompt at full price, so it stops early when retrying cannot
// help (a deterministic empty) or costs too much (an expensive prompt).
// Both checks fail open: without usage or pricing it keeps the full retry
// budget. One guard serves one turn's calls, one at a time; it is not safe
// for concurrent use.
type EmptyGuard struct {
	maxRetries   int
	thresholdUSD float64

	attempts  int
	budget    int // retries allowed for this streak
	costUSD   float64
	costKnown int // attempts whose cost was known
	included  int // attempts on a subscription route
	prev      emptySignature
	prevZero  bool // the previous attempt had reported usage and zero output
}

// NewEmptyGuard returns a guard allowing maxRetries retries of an empty
// answer, or a single one when an attempt's estimated input cost exceeds
// costThresholdUSD. Zero retries means none: the first empty answer gives
// up. A negative maxRetries selects DefaultEmptyRetries, a costThresholdUSD
// <= 0 DefaultEmptyCostThresholdUSD.
func NewEmptyGuard(maxRetries int, costThresholdUSD float64) *EmptyGuard {
	if maxRetries < 0 {
		maxRetries = DefaultEmptyRetries
	}
	if costThresholdUSD <= 0 {
		costThresholdUSD = DefaultEmptyCostThresholdUSD
	}
	g := &EmptyGuard{maxRetries: maxRetries, thresholdUSD: costThresholdUSD}
	g.Reset()
	return g
}

// Observe records an empty attempt and says what to do next, in this order:
//   - EmptyFallback when this and the previous attempt both reported usage
//     (with prompt tokens: an empty or all-zero usage object counts as
//     absent) with zero output tokens (reasoning counts as output) and came from the
//     same provider, model and finish reason: resending reproduces the same
//     empty, a different model may answer;
//   - EmptyGiveUp when the retries are spent: maxRetries, or 1 once any
//     attempt of the streak cost more than the threshold;
//   - EmptyRetry otherwise.
func (g *EmptyGuard) Observe(a EmptyAttempt) EmptyAction {
	g.attempts++
	if a.Included {
		g.included++
	} else if a.CostKnown {
		g.costUSD += a.EstInputCostUSD
		g.costKnown++
		if a.EstInputCostUSD > g.thresholdUSD {
			g.budget = min(g.budget, 1)
		}
	}
	sig := emptySignature{provider: a.Provider, model: a.Model, finish: a.Finish}
	// Only real numbers prove zero output: some servers send "usage": {}
	// or all zeros, and a usage without prompt tokens measured nothing.
	zero := a.Usage.Measured() && a.Usage.OutputTokens == 0 && a.Usage.ReasoningTokens == 0
	deterministic := zero && g.prevZero && sig == g.prev
	g.prev, g.prevZero = sig, zero
	switch {
	case deterministic:
		return EmptyFallback
	case g.attempts > g.budget:
		return EmptyGiveUp
	}
	return EmptyRetry
}

// Reset starts a new streak with the full budget. The engine calls it after
// any non-empty answer, after switching to a fallback model, and at the
// start of a turn.
func (g *EmptyGuard) Reset() {
	g.attempts = 0
	g.budget = g.maxRetries
	g.costUSD = 0
	g.costKnown = 0
	g.included = 0
	g.prev, g.prevZero = emptySignature{}, false
}

// Attempts is the number of empty answers since the last Reset.
func (g *EmptyGuard) Attempts() int { return g.attempts }

// EstCostUSD is the estimated input cost of the empty answers since the last
// Reset; ok is false when no attempt's cost was known.
func (g *EmptyGuard) EstCostUSD() (usd float64, ok bool) {
	return g.costUSD, g.costKnown > 0
}

// Summary explains giving up in one sentence a person can read: "the model
// returned an empty answer 3 times (estimated cost $0.12)". It is "" before
// any empty answer.
func (g *EmptyGuard) Summary() string {
	if g.attempts == 0 {
		return ""
	}
	var times string
	switch g.attempts {
	case 1:
		times = "once"
	case 2:
		times = "twice"
	default:
		times = fmt.Sprintf("%d times", g.attempts)
	}
	var cost string
	switch {
	case g.included == g.attempts:
		cost = "included in the subscription"
	case g.costKnown == 0:
		cost = "cost unknown"
	case g.costKnown < g.attempts && g.costUSD < 0.005:
		cost = "cost partly unknown"
	case g.costKnown < g.attempts:
		cost = "estimated cost at least " + formatUSD(g.costUSD)
	default:
		cost = "estimated cost " + formatUSD(g.costUSD)
	}
	return fmt.Sprintf("the model returned an empty answer %s (%s)", times, cost)
}

func formatUSD(usd float64) string {
	if usd > 0 && usd < 0.005 {
		return "under $0.01"
	}
	return fmt.Sprintf("$%.2f", usd)
}
