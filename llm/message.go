// Package llm holds the provider-neutral shapes of a conversation with a
// model: messages, requests, stream events, responses and the error type that
// keeps everything a failure classifier needs. It imports nothing of Talaria's.
package llm

import (
	"encoding/json"
	"strings"
)

// Role is who authored a message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// PartType says what a content part holds.
type PartType string

const (
	PartText  PartType = "text"
	PartImage PartType = "image"
)

// Part is one piece of message content. Text parts carry Text; image parts
// carry either Data (raw bytes, sent base64) with MediaType, or a URL.
type Part struct {
	Type      PartType `json:"type"`
	Text      string   `json:"text,omitempty"`
	MediaType string   `json:"media_type,omitempty"`
	Data      []byte   `json:"data,omitempty"`
	URL       string   `json:"url,omitempty"`
}

// TextPart is a convenience constructor for a text part.
func TextPart(s string) Part { return Part{Type: PartText, Text: s} }

// ToolCall is a model's request to run a tool. Arguments holds the raw JSON
// text exactly as the model produced it: it may be invalid JSON, and it is
// replayed byte for byte so the prompt-cache prefix stays stable.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ArgumentsJSON returns the arguments as a JSON value usable on the wire:
// the raw text when it is a valid JSON object, "{}" otherwise. Wire adapters
// that must send an object (Anthropic's tool_use input) use it.
func (c ToolCall) ArgumentsJSON() json.RawMessage {
	s := strings.TrimSpace(c.Arguments)
	if s == "" {
		return json.RawMessage("{}")
	}
	if s[0] == '{' && json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return json.RawMessage("{}")
}

// Reasoning is a model's thinking that came with an assistant message, and
// the opaque state a provider wants back on later calls.
//
// Text, Signature and Redacted are the first thinking block (Anthropic) or
// the reasoning summary (OpenAI Responses, Gemini), for display and for
// adapters that only read those fields. The replay state proper is Blocks
// (Anthropic: every thinking and redacted_thinking block, in order, with its
// signature) and Items (OpenAI Responses reasoning output items, Gemini
// parts with thought signatures: the exact JSON bytes received). Replay
// state is never edited, merged or cleaned: a signature covers its block's
// exact bytes.
//
// API and Model name the issuer; an adapter replays state only to the wire
// format (and, where the format requires it, the model) that issued it, so
// nothing unreadable is sent after a fallback.
type Reasoning struct {
	Text      string            `json:"text,omitempty"`
	Signature string            `json:"signature,omitempty"`
	Redacted  string            `json:"redacted,omitempty"`
	Blocks    []ThinkingBlock   `json:"blocks,omitempty"`
	Items     []json.RawMessage `json:"items,omitempty"`
	API       string            `json:"api,omitempty"`
	Model     string            `json:"model,omitempty"`
}

// ThinkingBlock is one Anthropic thinking (Type "thinking": Thinking and
// Signature) or redacted_thinking (Type "redacted_thinking": Data) block.
type ThinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

// Empty reports whether there is nothing to show or replay.
func (r *Reasoning) Empty() bool {
	return r == nil || (r.Text == "" && r.Signature == "" && r.Redacted == "" && len(r.Blocks) == 0 && len(r.Items) == 0)
}

// Signed reports whether r carries replay state a provider verifies
// (signatures, encrypted items), which must never be modified.
func (r *Reasoning) Signed() bool {
	return r != nil && (r.Signature != "" || r.Redacted != "" || len(r.Blocks) > 0 || len(r.Items) > 0)
}

// IssuedBy reports whether r was issued by the wire format api (and model,
// when model is non-empty). State without an issuer predates issuer
// tracking and counts as Anthropic's, the only format that stored any.
func (r *Reasoning) IssuedBy(api, model string) bool {
	if r == nil {
		return false
	}
	issuer := r.API
	if issuer == "" {
		issuer = "anthropic"
	}
	return issuer == api && (model == "" || r.Model == "" || r.Model == model)
}

// Message is one entry of a conversation.
//
// A tool result has Role == RoleTool, ToolCallID naming the call it answers
// and ToolName the tool's name; IsError marks a failed call.
type Message struct {
	Role       Role       `json:"role"`
	Content    []Part     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	ToolName   string     `json:"tool_name,omitempty"`
	IsError    bool       `json:"is_error,omitempty"`
	Reasoning  *Reasoning `json:"reasoning,omitempty"`
}

// NewText builds a message with a single text part.
func NewText(role Role, text string) Message {
	return Message{Role: role, Content: []Part{TextPart(text)}}
}

// NewToolResult builds the tool-role message that answers call.
func NewToolResult(call ToolCall, content string, isError bool) Message {
	return Message{
		Role:       RoleTool,
		Content:    []Part{TextPart(content)},
		ToolCallID: call.ID,
		ToolName:   call.Name,
		IsError:    isError,
	}
}

// Text concatenates the message's text parts.
func (m Message) Text() string {
	switch len(m.Content) {
	case 0:
		return ""
	case 1:
		if m.Content[0].Type == PartText {
			return m.Content[0].Text
		}
		return ""
	}
	var b strings.Builder
	for _, p := range m.Content {
		if p.Type == PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// HasImages reports whether any part is an image.
func (m Message) HasImages() bool {
	for _, p := range m.Content {
		if p.Type == PartImage {
			return true
		}
	}
	return false
}

// ToolSpec describes a tool offered to the model. Parameters is a JSON
// Schema object.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Usage is token accounting for one API call, normalized across providers:
// InputTokens are prompt tokens that were neither read from nor written to
// the prompt cache, so the whole prompt is InputTokens + CacheReadTokens +
// CacheWriteTokens. ReasoningTokens are part of OutputTokens.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	// CacheWrite1hTokens is the part of CacheWriteTokens written to a
	// 1-hour cache tier (Anthropic's ttl "1h"), whose writes cost more than
	// the default 5-minute tier's.
	CacheWrite1hTokens int64 `json:"cache_write_1h_tokens,omitempty"`
	ReasoningTokens    int64 `json:"reasoning_tokens,omitempty"`
	// Reported is false when the provider sent no usage at all, which the
	// guards treat differently from a reported zero.
	Reported bool `json:"reported"`
}

// Measured reports whether the usage holds real numbers: reported, with
// prompt tokens. Some servers send "usage": {} or all zeros, which proves
// nothing about the answer's size, so callers that draw conclusions from a
// count (zero output, a prompt under a limit) treat such usage as absent.
func (u Usage) Measured() bool { return u.Reported && u.PromptTokens() > 0 }

// PromptTokens is the full size of the prompt the provider saw.
func (u Usage) PromptTokens() int64 {
	return u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// Add accumulates o into u.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheReadTokens += o.CacheReadTokens
	u.CacheWriteTokens += o.CacheWriteTokens
	u.CacheWrite1hTokens += o.CacheWrite1hTokens
	u.ReasoningTokens += o.ReasoningTokens
	u.Reported = u.Reported || o.Reported
}

// FinishReason is why the model stopped, normalized across providers.
type FinishReason string

const (
	FinishStop          FinishReason = "stop"           // natural end (OpenAI stop, Anthropic end_turn/stop_sequence)
	FinishToolCalls     FinishReason = "tool_calls"     // stopped to call tools (tool_use)
	FinishLength        FinishReason = "length"         // output limit hit (max_tokens)
	FinishContentFilter FinishReason = "content_filter" // provider filtered the output
	FinishRefusal       FinishReason = "refusal"        // model refused (Anthropic refusal)
	FinishUnknown       FinishReason = ""               // missing or unrecognized
)

// MergeReasoning is the reasoning of two assistant messages merged into one
// (a continuation stitched to the message it continues): the newer wins,
// but a checkpoint of the older (a replay item of type "compaction", the
// only copy of the history the server pruned) is kept unless the newer
// carries one of its own.
func MergeReasoning(older, newer *Reasoning) *Reasoning {
	if newer.Empty() {
		return older
	}
	if older.Empty() || hasCheckpoint(newer) || !hasCheckpoint(older) {
		return newer
	}
	merged := *newer
	merged.Items = nil
	for _, it := range older.Items {
		if itemType(it) == "compaction" {
			merged.Items = append(merged.Items, it)
		}
	}
	merged.Items = append(merged.Items, newer.Items...)
	return &merged
}

func hasCheckpoint(r *Reasoning) bool {
	for _, it := range r.Items {
		if itemType(it) == "compaction" {
			return true
		}
	}
	return false
}

func itemType(raw json.RawMessage) string {
	var h struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &h)
	return h.Type
}
