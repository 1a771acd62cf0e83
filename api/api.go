// Package api holds Talaria's public JSON shapes: the one form of a
// session, its usage, a transcript row, a search hit, an error code, an
// event type and an approval answer that the HTTP API (/v1/sessions…,
// /v1/search, the event stream, error answers, approvals), the Go client
// (gateway/client) and the CLI's --json output (sessions list/show/search)
// all speak, so a script written against one reads the others.
//
// It imports nothing but the standard library: a client links it without
// the server.
package api

import "time"

// Session is a stored conversation.
type Session struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Kind is what made it: "" for a conversation, "subagent" for a
	// delegated child, and the like.
	Kind string `json:"kind,omitempty"`
	// Workspace is where its tools ran: the workspace's name over the API
	// (a tenant never sees the server's paths), the path in the CLI.
	Workspace string `json:"workspace"`
	// ParentID is the session that delegated this one (subagents) or that
	// it continues (rotation); empty for a root.
	ParentID  string    `json:"parent_id,omitempty"`
	EndReason string    `json:"end_reason,omitempty"`
	StartedAt time.Time `json:"started_at"`
	UpdatedAt time.Time `json:"updated_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// Messages is how many rows its transcript holds.
	Messages int64 `json:"messages"`
	// Busy and Queued are the server's view: a turn running now, and the
	// messages waiting behind it (always false and 0 in the CLI).
	Busy   bool  `json:"busy"`
	Queued int   `json:"queued"`
	Usage  Usage `json:"usage"`
	// Models are every provider/model its answers came from, in order of
	// first use (sessions list only).
	Models []Model `json:"models,omitempty"`
}

// Usage is what a session (or a turn) has used so far.
type Usage struct {
	APICalls         int64 `json:"api_calls"`
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	// CacheWrite1hTokens is the part of CacheWriteTokens written to a
	// 1-hour cache tier.
	CacheWrite1hTokens int64   `json:"cache_write_1h_tokens,omitempty"`
	ReasoningTokens    int64   `json:"reasoning_tokens"`
	CostUSD            float64 `json:"cost_usd"`
}

// Model is one provider/model pair.
type Model struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
}

// Message is one stored row of a session's transcript: the HTTP API's
// /v1/sessions/{id}/messages and message events, and `talaria sessions show
// --json`. Reasoning, Provider and Model are set on assistant rows;
// ToolCallID, ToolName and IsError on tool results; Archived on rows a
// compaction replaced (listed only when asked for).
type Message struct {
	ID           int64      `json:"id"`
	Seq          int64      `json:"seq"`
	TurnID       string     `json:"turn_id,omitempty"`
	Role         string     `json:"role"`
	Text         string     `json:"text"`
	Reasoning    string     `json:"reasoning,omitempty"`
	ToolCalls    []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID   string     `json:"tool_call_id,omitempty"`
	ToolName     string     `json:"tool_name,omitempty"`
	IsError      bool       `json:"is_error,omitempty"`
	Kind         string     `json:"kind,omitempty"`
	Synthetic    bool       `json:"synthetic,omitempty"`
	Archived     bool       `json:"archived,omitempty"`
	FinishReason string     `json:"finish_reason,omitempty"`
	Provider     string     `json:"provider,omitempty"`
	Model        string     `json:"model,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
}

// ToolCall is a tool call an assistant message made; Arguments is the JSON
// text the model wrote.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// SearchHit is one message a full-text search found: /v1/search and
// `talaria sessions search --json`. Snippet marks the matched words.
type SearchHit struct {
	SessionID string    `json:"session_id"`
	MessageID int64     `json:"message_id"`
	Seq       int64     `json:"seq"`
	Role      string    `json:"role"`
	Snippet   string    `json:"snippet"`
	CreatedAt time.Time `json:"created_at"`
}
