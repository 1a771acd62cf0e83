package anthropic

import "encoding/json"

// The request is built from these types rather than the SDK's params so the
// bytes are fully under our control: field order is fixed by the struct
// declarations, raw tool schemas and arguments pass through unchanged (only
// compacted), and nothing depends on map iteration order.

type wireRequest struct {
	Model       string         `json:"model"`
	MaxTokens   int            `json:"max_tokens"`
	System      []*textBlock   `json:"system,omitempty"`
	Messages    []*wireMessage `json:"messages"`
	Tools       []*wireTool    `json:"tools,omitempty"`
	Thinking    *wireThinking  `json:"thinking,omitempty"`
	Temperature *float64       `json:"temperature,omitempty"`
	Stream      bool           `json:"stream"`
}

type wireThinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

type wireMessage struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
	cacheMark
}

// block is one content block; every kind can carry a cache breakpoint.
type block interface{ markCache(ttl string) }

// cacheControl is a breakpoint; TTL "" is the API's default 5-minute tier,
// "1h" the 1-hour tier (provider setting cache_ttl).
type cacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// cacheMark is embedded last in each block so cache_control, when set, is
// the block's final field.
type cacheMark struct {
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

func (c *cacheMark) markCache(ttl string) {
	c.CacheControl = &cacheControl{Type: "ephemeral", TTL: ttl}
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
	cacheMark
}

type imageBlock struct {
	Type   string      `json:"type"`
	Source imageSource `json:"source"`
	cacheMark
}

type imageSource struct {
	Type      string `json:"type"` // "base64" or "url"
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type toolUseBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	cacheMark
}

type toolResultBlock struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	// Content is a string, or a []block when the result has images; nil
	// omits it (an empty result).
	Content any  `json:"content,omitempty"`
	IsError bool `json:"is_error,omitempty"`
	cacheMark
}

// thinkingBlock has no omitempty: the API requires both fields even when the
// thinking text is empty (omitted-thinking models still sign it).
type thinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
	cacheMark
}

type redactedThinkingBlock struct {
	Type string `json:"type"`
	Data string `json:"data"`
	cacheMark
}
