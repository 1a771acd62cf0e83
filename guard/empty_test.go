package guard

import (
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

func TestEmptyGuard(t *testing.T) {
	zero := llm.Usage{InputTokens: 26_000, Reported: true}
	attempt := func(model string, finish llm.FinishReason, u llm.Usage) EmptyAttempt {
		return EmptyAttempt{Provider: "openrouter", Model: model, Finish: finish, Usage: u}
	}
	det := attempt("m1", llm.FinishStop, zero)
	priced := func(a EmptyAttempt, usd float64) EmptyAttempt { a.EstInputCostUSD, a.CostKnown = usd, true; return a }
	noUsage := attempt("m1", llm.FinishStop, llm.Usage{})
	reasoning := attempt("m1", llm.FinishStop, llm.Usage{InputTokens: 26_000, ReasoningTokens: 40, Reported: true})
	someOutput := attempt("m1", llm.FinishStop, llm.Usage{InputTokens: 26_000, OutputTokens: 3, Reported: true})
	// "usage": {} or all zeros, as some servers send: reported, but it
	// measured nothing.
	emptyUsage := attempt("m1", llm.FinishStop, llm.Usage{Reported: true})

	tests := []struct {
		name       string
		maxRetries int // 0: the default
		noRetries  bool
		threshold  float64
		attempts   []EmptyAttempt
		want       []EmptyAction
	}{
		{
			name:     "deterministic pair goes to fallback after exactly two",
			attempts: []EmptyAttempt{det, det},
			want:     []EmptyAction{EmptyRetry, EmptyFallback},
		},
		{
			name:     "signature change keeps retrying",
			attempts: []EmptyAttempt{det, attempt("m2", llm.FinishStop, zero), attempt("m2", llm.FinishLength, zero), det},
			want:     []EmptyAction{EmptyRetry, EmptyRetry, EmptyRetry, EmptyGiveUp},
		},
		{
			name:     "provider change is a signature change",
			attempts: []EmptyAttempt{det, {Provider: "openai", Model: "m1", Finish: llm.FinishStop, Usage: zero}},
			want:     []EmptyAction{EmptyRetry, EmptyRetry},
		},
		{
			name:     "missing usage fails open",
			attempts: []EmptyAttempt{noUsage, noUsage, noUsage, noUsage},
			want:     []EmptyAction{EmptyRetry, EmptyRetry, EmptyRetry, EmptyGiveUp},
		},
		{
			name:     "missing usage in between breaks the pair",
			attempts: []EmptyAttempt{det, noUsage, det, det},
			want:     []EmptyAction{EmptyRetry, EmptyRetry, EmptyRetry, EmptyFallback},
		},
		{
			name:     "an empty or all-zero usage object is no proof of zero output",
			attempts: []EmptyAttempt{emptyUsage, emptyUsage, emptyUsage, emptyUsage},
			want:     []EmptyAction{EmptyRetry, EmptyRetry, EmptyRetry, EmptyGiveUp},
		},
		{
			name:      "zero retries gives up at the first empty",
			noRetries: true,
			attempts:  []EmptyAttempt{noUsage},
			want:      []EmptyAction{EmptyGiveUp},
		},
		{
			name:      "zero retries wins over an expensive attempt",
			noRetries: true,
			attempts:  []EmptyAttempt{priced(noUsage, 5)},
			want:      []EmptyAction{EmptyGiveUp},
		},
		{
			name:     "reasoning tokens count as output",
			attempts: []EmptyAttempt{reasoning, reasoning, reasoning},
			want:     []EmptyAction{EmptyRetry, EmptyRetry, EmptyRetry},
		},
		{
			name:     "nonzero output is not deterministic",
			attempts: []EmptyAttempt{someOutput, someOutput},
			want:     []EmptyAction{EmptyRetry, EmptyRetry},
		},
		{
			name:     "expensive attempt allows one retry",
			attempts: []EmptyAttempt{priced(noUsage, 0.80), priced(noUsage, 0.80)},
			want:     []EmptyAction{EmptyRetry, EmptyGiveUp},
		},
		{
			name:     "cheap attempts keep the full budget",
			attempts: []EmptyAttempt{priced(noUsage, 0.10), priced(noUsage, 0.10), priced(noUsage, 0.10), priced(noUsage, 0.10)},
			want:     []EmptyAction{EmptyRetry, EmptyRetry, EmptyRetry, EmptyGiveUp},
		},
		{
			name:     "threshold is exclusive",
			attempts: []EmptyAttempt{priced(noUsage, 0.25), priced(noUsage, 0.25)},
			want:     []EmptyAction{EmptyRetry, EmptyRetry},
		},
		{
			name:     "unknown cost fails open",
			attempts: []EmptyAttempt{{EstInputCostUSD: 5, CostKnown: false}, noUsage, noUsage, noUsage},
			want:     []EmptyAction{EmptyRetry, EmptyRetry, EmptyRetry, EmptyGiveUp},
		},
		{
			name:     "expensive late in the streak ends it",
			attempts: []EmptyAttempt{noUsage, priced(noUsage, 1)},
			want:     []EmptyAction{EmptyRetry, EmptyGiveUp},
		},
		{
			name:     "deterministic wins over a spent budget",
			attempts: []EmptyAttempt{priced(det, 1), priced(det, 1)},
			want:     []EmptyAction{EmptyRetry, EmptyFallback},
		},
		{
			name:       "custom budget and threshold",
			maxRetries: 1,
			threshold:  2,
			attempts:   []EmptyAttempt{priced(noUsage, 1.5), noUsage},
			want:       []EmptyAction{EmptyRetry, EmptyGiveUp},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			retries := tc.maxRetries
			switch {
			case tc.noRetries:
				retries = 0
			case retries == 0:
				retries = -1
			}
			g := NewEmptyGuard(retries, tc.threshold)
			for i, a := range tc.attempts {
				if got := g.Observe(a); got != tc.want[i] {
					t.Fatalf("attempt %d: %v, want %v", i+1, got, tc.want[i])
				}
			}
			if g.Attempts() != len(tc.attempts) {
				t.Errorf("Attempts() = %d, want %d", g.Attempts(), len(tc.attempts))
			}
		})
	}
}

func TestEmptyGuardReset(t *testing.T) {
	det := EmptyAttempt{Provider: "p", Model: "m", Finish: llm.FinishStop, Usage: llm.Usage{InputTokens: 10, Reported: true}, EstInputCostUSD: 1, CostKnown: true}
	g := NewEmptyGuard(-1, 0)
	g.Observe(det)
	g.Reset()
	if g.Attempts() != 0 {
		t.Errorf("Attempts() after Reset = %d", g.Attempts())
	}
	if _, ok := g.EstCostUSD(); ok {
		t.Error("cost still known after Reset")
	}
	// The pair and the lowered budget are forgotten too.
	if got := g.Observe(det); got != EmptyRetry {
		t.Errorf("first attempt after Reset: %v, want retry", got)
	}
}

func TestEmptyGuardSummary(t *testing.T) {
	known := func(usd float64) EmptyAttempt { return EmptyAttempt{EstInputCostUSD: usd, CostKnown: true} }
	tests := []struct {
		name     string
		attempts []EmptyAttempt
		want     string
		wantUSD  float64
		wantOK   bool
	}{
		{"nothing yet", nil, "", 0, false},
		{"three priced", []EmptyAttempt{known(0.04), known(0.04), known(0.04)}, "the model returned an empty answer 3 times (estimated cost $0.12)", 0.12, true},
		{"once", []EmptyAttempt{known(2.33)}, "the model returned an empty answer once (estimated cost $2.33)", 2.33, true},
		{"twice unknown", []EmptyAttempt{{}, {}}, "the model returned an empty answer twice (cost unknown)", 0, false},
		{"partly known", []EmptyAttempt{known(0.5), {}}, "the model returned an empty answer twice (estimated cost at least $0.50)", 0.5, true},
		{"tiny", []EmptyAttempt{known(0.001)}, "the model returned an empty answer once (estimated cost under $0.01)", 0.001, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewEmptyGuard(5, 10)
			for _, a := range tc.attempts {
				g.Observe(a)
			}
			if got := g.Summary(); got != tc.want {
				t.Errorf("Summary() = %q, want %q", got, tc.want)
			}
			usd, ok := g.EstCostUSD()
			if ok != tc.wantOK || usd < tc.wantUSD-1e-9 || usd > tc.wantUSD+1e-9 {
				t.Errorf("EstCostUSD() = %v, %v; want %v, %v", usd, ok, tc.wantUSD, tc.wantOK)
			}
		})
	}
}

func TestEmptyActionString(t *testing.T) {
	for a, want := range map[EmptyAction]string{EmptyRetry: "retry", EmptyFallback: "fallback", EmptyGiveUp: "give_up", 0: "EmptyAction(0)"} {
		if got := a.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(a), got, want)
		}
	}
}
