package compact

import (
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// copyRow copies a row for the new transcript: every field survives except
// the store-assigned ID, Seq and SessionID, and slices are copied so the new
// rows share nothing with the old.
func copyRow(m store.Message) store.Message {
	m.ID, m.Seq, m.SessionID = 0, 0, ""
	if m.Content != nil {
		m.Content = append([]llm.Part(nil), m.Content...)
		for i := range m.Content {
			if d := m.Content[i].Data; d != nil {
				m.Content[i].Data = append([]byte(nil), d...)
			}
		}
	}
	if m.ToolCalls != nil {
		m.ToolCalls = append([]llm.ToolCall(nil), m.ToolCalls...)
	}
	if m.Reasoning != nil {
		r := *m.Reasoning
		m.Reasoning = &r
	}
	return m
}

// wireText is the text a row sends to the model: APIContent when set, else
// its text parts.
func wireText(m *store.Message) string {
	if m.APIContent != "" {
		return m.APIContent
	}
	return m.Text()
}

// rowCost estimates what a row adds to a request. Display-only rows are
// never sent, and APIContent replaces the text parts on the wire.
func rowCost(m *store.Message) int {
	if m.Kind.DisplayOnly() {
		return 0
	}
	if m.APIContent == "" {
		return EstimateMessage(m.Message)
	}
	n := EstimateMessage(llm.Message{
		Role: m.Role, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID,
		ToolName: m.ToolName, Reasoning: m.Reasoning,
	})
	return n + EstimateText(m.APIContent)
}

// isEngineKind reports kinds the engine writes on its own.
func isEngineKind(k store.RowKind) bool {
	switch k {
	case store.RowSummary, store.RowNudge, store.RowNotice, store.RowFailure:
		return true
	}
	return false
}

// isRealUser reports whether a row is something the user wrote: role user,
// not synthetic, not an engine kind (checked too, for rows persisted before
// the Synthetic flag was set reliably).
func isRealUser(m *store.Message) bool {
	return m.Role == llm.RoleUser && !m.Synthetic && !isEngineKind(m.Kind)
}
