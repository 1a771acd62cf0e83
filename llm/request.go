package llm

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
	// APIKey overrides the adapter's configured key for this call; the
	// credential pool uses it to rotate keys without rebuilding clients.
	APIKey string `json:"-"`
}
