package turn

import (
	"time"

	"github.com/talaria-agent/talaria/llm"
)

// Exit is why a turn ended. Every turn ends with exactly one.
type Exit string

const (
	ExitCompleted            Exit = "completed"             // the model gave its final answer
	ExitBudgetExhausted      Exit = "budget_exhausted"      // iteration budget spent (after the grace call)
	ExitInterrupted          Exit = "interrupted"           // the caller cancelled (Ctrl+C)
	ExitFailed               Exit = "failed"                // a provider failure no recovery could fix; see Failure
	ExitCompressionFailed    Exit = "compression_failed"    // the context could not be compressed
	ExitCompressionExhausted Exit = "compression_exhausted" // overflow persisted after every compression attempt
	ExitPersistenceFailed    Exit = "persistence_failed"    // a durable write failed where losing it is not allowed
	ExitToolLoop             Exit = "tool_loop"             // unattended run stopped an identical-call loop
	ExitPanic                Exit = "panic"                 // a bug; recovered, the process lives on
	ExitLeaseLost            Exit = "lease_lost"            // another process took over the session
	ExitBusy                 Exit = "busy"                  // the session's turn lease could not be had in time
	ExitSpendLimit           Exit = "spend_limit"           // the next call would pass the principal's daily spending limit
	ExitHandoffLimit         Exit = "handoff_limit"         // its node died more often than the turn may be handed off (serve.handoff_max)
	ExitSessionFailed        Exit = "session_failed"        // the session could not be loaded, taken over or followed to its tip
	ExitCredentialsFailed    Exit = "credentials_failed"    // no API key could be chosen (the key store failed)
	ExitConfigurationFailed  Exit = "configuration_failed"  // a server cannot run the session's provider, model or workspace
)

// Pricing says how a turn's CostUSD is known. Its values are the wire
// strings of Result.Pricing; the zero value is PricingNone.
type Pricing string

const (
	PricingNone    Pricing = ""         // no API call was made
	PricingPriced  Pricing = "priced"   // every call had a price: CostUSD is the cost
	PricingUnknown Pricing = "unpriced" // some call's model has no price: CostUSD is a lower bound
	// PricingSubscription: every call was included in a subscription (not $0).
	PricingSubscription Pricing = "subscription"
	// PricingPartlySubscription: some calls were priced (CostUSD), others
	// included in a subscription.
	PricingPartlySubscription Pricing = "partly subscription"
)

// CostIsLowerBound reports whether CostUSD may be less than the turn's
// real cost: some call had no price.
func (p Pricing) CostIsLowerBound() bool { return p == PricingUnknown }

// HasCost reports whether CostUSD is a metered amount (possibly a lower
// bound): not with no call and not when every call was a subscription's.
func (p Pricing) HasCost() bool {
	return p == PricingPriced || p == PricingUnknown || p == PricingPartlySubscription
}

// RouteAttempt records one provider/model the turn used or tried.
type RouteAttempt struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Calls    int    `json:"calls"`
	// Outcome is "ok" or the failure class that made the turn leave it.
	Outcome string `json:"outcome"`
}

// Result is what a turn returns, always.
type Result struct {
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id"`
	Exit      Exit   `json:"exit"`
	FinalText string `json:"final_text"`
	// Truncated is set when the answer hit the output limit on every
	// continuation and the kept text is partial.
	Truncated  bool      `json:"truncated,omitempty"`
	APICalls   int       `json:"api_calls"`
	Iterations int       `json:"iterations"`
	ToolRounds int       `json:"tool_rounds"`
	ToolCalls  int       `json:"tool_calls"`
	GraceCall  bool      `json:"grace_call,omitempty"`
	Usage      llm.Usage `json:"usage"`
	CostUSD    float64   `json:"cost_usd"`
	CostKnown  bool      `json:"cost_known"`
	// Pricing says how CostUSD is known; PricingNone with no API call.
	Pricing     Pricing        `json:"pricing,omitempty"`
	Compactions int            `json:"compactions,omitempty"`
	Provider    string         `json:"provider"`
	Model       string         `json:"model"`
	Routes      []RouteAttempt `json:"routes,omitempty"`
	// Explanation says in plain words why the turn ended as it did when that
	// was not a plain completion (budget spent, truncated, failed, ...).
	Explanation string        `json:"explanation,omitempty"`
	Failure     *Failure      `json:"failure,omitempty"`
	Duration    time.Duration `json:"duration_ns"`
	// Subagents totals the child sessions this turn ran (delegated tasks).
	// Usage, CostUSD and APICalls above are this session's own calls only,
	// which is what its context accounting sees; add Subagents for the
	// turn's whole spend (TotalCostUSD).
	Subagents *SubagentTotals `json:"subagents,omitempty"`
}

// SubagentTotals sums the child sessions of a turn, their own children
// included.
type SubagentTotals struct {
	Count    int       `json:"count"`
	Usage    llm.Usage `json:"usage"`
	CostUSD  float64   `json:"cost_usd"`
	APICalls int       `json:"api_calls"`
}

// TotalCostUSD is the turn's cost including its subagents.
func (r *Result) TotalCostUSD() float64 {
	if r.Subagents == nil {
		return r.CostUSD
	}
	return r.CostUSD + r.Subagents.CostUSD
}

// OK reports whether the turn completed normally.
func (r *Result) OK() bool { return r.Exit == ExitCompleted }
