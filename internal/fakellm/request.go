package fakellm

import (
	"bytes"
	"net/http"
	"slices"
)

// API names used in Request.API.
const (
	APIOpenAI    = "openai"
	APIAnthropic = "anthropic"
)

// Request is one received API request: raw, and as a normalized view.
type Request struct {
	API    string // APIOpenAI or APIAnthropic
	Path   string
	Model  string
	Stream bool
	Header http.Header
	// Body is the raw request body exactly as received.
	Body []byte
	// System is Anthropic's "system" (a string, or its text blocks joined
	// with "\n"), or the text of OpenAI system/developer messages joined
	// with "\n".
	System string
	// Messages is the conversation without system messages. Anthropic
	// tool_result blocks become Role "tool" entries, in block order.
	Messages []Msg
	// Tools are the names of the tools offered, in order.
	Tools     []string
	MaxTokens int
	// IncludeUsage is OpenAI's stream_options.include_usage.
	IncludeUsage bool
	// ThinkingBudget is Anthropic's thinking.budget_tokens (0: thinking off).
	ThinkingBudget int
	// CacheTTLs are the ttls of Anthropic's cache_control marks in the
	// order the API processes them (tools, system, messages); "5m" where
	// a mark names none.
	CacheTTLs []string
	// ReasoningItems are the ids of the OpenAI Responses reasoning items
	// the request replayed, in order.
	ReasoningItems []string

	// CompactThreshold is Responses' context_management compact_threshold
	// (0: none sent); Checkpoints are the ids of compaction items replayed.
	CompactThreshold int
	Checkpoints      []string

	// epoch is the server's reasoning key when the request arrived.
	epoch int
	// noContextManagement: the server refuses context_management.
	noContextManagement bool
}

// Msg is one normalized message.
type Msg struct {
	Role string // "user", "assistant", "tool"
	// Text is the message's text parts concatenated (no separator, like
	// llm.Message.Text).
	Text       string
	ToolCalls  []Call
	ToolCallID string
	// Reasoning is replayed thinking: OpenAI reasoning_content, Anthropic
	// thinking blocks.
	Reasoning string
	// IsError is an Anthropic tool_result's is_error.
	IsError bool
	// Signatures are the replayed Anthropic thinking signatures and
	// redacted_thinking payloads, Gemini thought signatures, in order.
	Signatures []string
}

// clone deep-copies r so callers can keep or modify it freely.
func (r Request) clone() Request {
	c := r
	c.Header = r.Header.Clone()
	c.Body = bytes.Clone(r.Body)
	c.Tools = slices.Clone(r.Tools)
	c.ReasoningItems = slices.Clone(r.ReasoningItems)
	c.Checkpoints = slices.Clone(r.Checkpoints)
	if r.Messages != nil {
		c.Messages = make([]Msg, len(r.Messages))
		for i, m := range r.Messages {
			m.ToolCalls = slices.Clone(m.ToolCalls)
			m.Signatures = slices.Clone(m.Signatures)
			c.Messages[i] = m
		}
	}
	return c
}
