// Package apiview builds the public JSON shapes of package api from stored
// rows, once for every surface that shows them: the gateway's HTTP API and
// event stream, and the CLI's --json output.
package apiview

import (
	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/store"
)

// Session is s as the public shape shows it. workspace is what the reader
// may see of s.Cwd: a workspace's name over the API (a tenant never sees
// the server's paths), the path itself in the CLI. Busy, Queued and Models
// are the caller's to fill.
func Session(s *store.Session, workspace string) api.Session {
	return api.Session{ID: s.ID, Title: s.Title, Provider: s.Provider, Model: s.Model, Kind: s.Kind,
		Workspace: workspace, ParentID: s.ParentID, EndReason: s.EndReason,
		StartedAt: s.StartedAt, UpdatedAt: s.UpdatedAt, EndedAt: s.EndedAt,
		Messages: s.MessageCount, Usage: Usage(s)}
}

// Usage is what s has used so far.
func Usage(s *store.Session) api.Usage {
	u := s.Usage
	return api.Usage{APICalls: s.APICalls, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, CacheWrite1hTokens: u.CacheWrite1hTokens,
		ReasoningTokens: u.ReasoningTokens, CostUSD: s.CostUSD}
}

// Message is one transcript row.
func Message(m *store.Message) api.Message {
	v := api.Message{ID: m.ID, Seq: m.Seq, TurnID: m.TurnID, Role: string(m.Role), Text: m.Text(),
		ToolCallID: m.ToolCallID, ToolName: m.ToolName, IsError: m.IsError, Kind: string(m.Kind),
		Synthetic: m.Synthetic, Archived: m.Archived, FinishReason: string(m.FinishReason),
		Provider: m.Provider, Model: m.Model, CreatedAt: m.CreatedAt}
	if m.Reasoning != nil {
		v.Reasoning = m.Reasoning.Text
	}
	if len(m.ToolCalls) > 0 {
		v.ToolCalls = make([]api.ToolCall, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			v.ToolCalls[i] = api.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
		}
	}
	return v
}

// SearchHit is one message a search found.
func SearchHit(h store.SearchHit) api.SearchHit {
	return api.SearchHit{SessionID: h.SessionID, MessageID: h.MessageID, Seq: h.Seq, Role: string(h.Role),
		Snippet: h.Snippet, CreatedAt: h.CreatedAt}
}
