package apiview

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

func TestMessageCarriesEveryPublicField(t *testing.T) {
	at := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	asst := store.Message{ID: 7, Seq: 3, TurnID: "t1", Provider: "openai", Model: "gpt-x", CreatedAt: at,
		FinishReason: llm.FinishToolCalls, Message: llm.Message{Role: llm.RoleAssistant,
			Content:   []llm.Part{llm.TextPart("let me look")},
			ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"a"}`}},
			Reasoning: &llm.Reasoning{Text: "thinking", Signature: "sig"}}}
	tool := store.Message{ID: 8, Seq: 4, Archived: true, Kind: store.RowNotice, Synthetic: true,
		Message: llm.NewToolResult(llm.ToolCall{ID: "c1", Name: "read_file"}, "boom", true)}

	a := Message(&asst)
	if a.Text != "let me look" || a.Reasoning != "thinking" || a.Role != "assistant" || a.FinishReason != string(llm.FinishToolCalls) ||
		a.Provider != "openai" || a.Model != "gpt-x" || a.TurnID != "t1" || !a.CreatedAt.Equal(at) ||
		len(a.ToolCalls) != 1 || a.ToolCalls[0] != (api.ToolCall{ID: "c1", Name: "read_file", Arguments: `{"path":"a"}`}) {
		t.Errorf("assistant row: %+v", a)
	}
	r := Message(&tool)
	if r.ToolCallID != "c1" || r.ToolName != "read_file" || !r.IsError || !r.Archived || !r.Synthetic || r.Kind != string(store.RowNotice) {
		t.Errorf("tool row: %+v", r)
	}
	// The signature and provider blocks of reasoning are replay data, not
	// for readers.
	b, _ := json.Marshal(a)
	if strings.Contains(string(b), "sig") {
		t.Errorf("reasoning signature leaked: %s", b)
	}
}

func TestSessionAndHit(t *testing.T) {
	s := store.Session{ID: "s1", Cwd: "/srv/ws/alice", MessageCount: 4, APICalls: 2, CostUSD: 0.5,
		Usage: llm.Usage{InputTokens: 10, OutputTokens: 3, CacheReadTokens: 1}}
	v := Session(&s, "alice")
	if v.Workspace != "alice" || v.Messages != 4 || v.Usage.APICalls != 2 || v.Usage.CostUSD != 0.5 || v.Usage.InputTokens != 10 || v.Usage.CacheReadTokens != 1 {
		t.Errorf("session: %+v", v)
	}
	h := SearchHit(store.SearchHit{SessionID: "s1", MessageID: 9, Seq: 2, Role: llm.RoleUser, Snippet: "«x»"})
	if h.MessageID != 9 || h.Role != "user" || h.Snippet != "«x»" {
		t.Errorf("hit: %+v", h)
	}
}
