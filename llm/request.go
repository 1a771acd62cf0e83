package llm

import "github.com/talaria-agent/talaria/llm/internal/wire"

// Request is one API call, provider-neutral. Adapters translate it to the wire
// deterministically: the same Request always yields the same bytes, which is
// what keeps the provider's prompt cache warm.
type Request struct {
	Model    string
	System   string
	Messages []Message
	// Tools offered to the model; nil offers none (the grace call).
	Tools []ToolSpec
	// MaxTokens caps the output; 0 lets the adapter pick its default.
	MaxTokens   int
	Temperature *float64
	// PromptCache asks adapters that need explicit markers (Anthropic) to
	// place cache breakpoints on tools+system and the newest messages.
	PromptCache bool
	// CacheTTL is the prompt-cache tier of those breakpoints: "" the
	// provider's configured tier (Anthropic's default is 5 minutes), "1h"
	// Anthropic's 1-hour tier. Every mark of one request has the same tier,
	// so the bytes stay the same from call to call.
	CacheTTL string
	// APIKey overrides the adapter's configured key for this call; the
	// credential pool uses it to rotate keys without rebuilding clients.
	APIKey string `json:"-"`
	// Stable says the first Stable messages are the same values as in every
	// earlier request that carried the same Wire cache, and Wire holds the
	// bytes adapters encoded them to on those calls, so a call encodes only
	// what is new. Both are optional (zero: encode everything) and never
	// change the bytes sent. Failover, estimates and observers read Messages
	// as always.
	Stable int        `json:"-"`
	Wire   *WireCache `json:"-"`
	// Session names the conversation the call belongs to, for state an
	// adapter keeps per session (an endpoint's refusal of an optional
	// feature for that session). Optional; never sent.
	Session string `json:"-"`
}

// WireCache keeps the bytes of a session's encoded message prefix between
// calls (see Request.Wire). The zero value is ready; it is safe for
// concurrent use, and one cache serves one session.
type WireCache = wire.Cache
