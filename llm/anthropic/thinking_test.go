package anthropic

import (
	"errors"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

func TestThinkingRequest(t *testing.T) {
	temp := 0.2
	user := llm.NewText(llm.RoleUser, "hi")
	call := llm.ToolCall{ID: "t1", Name: "read", Arguments: `{}`}
	signed := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}, Reasoning: &llm.Reasoning{
		API: "anthropic", Blocks: []llm.ThinkingBlock{{Type: "thinking", Thinking: "plan", Signature: "S1"}, {Type: "redacted_thinking", Data: "R1"}},
	}}
	unsigned := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}}
	foreign := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}, Reasoning: &llm.Reasoning{
		API: "openai-responses", Text: "summary", Items: nil, Signature: "not-anthropic",
	}}
	result := llm.NewToolResult(call, "one", false)
	tests := []struct {
		name         string
		req          llm.Request
		budget       int
		wantErr      string
		want, absent []string
	}{
		{name: "off", req: llm.Request{Model: "m", Messages: []llm.Message{user}, Temperature: &temp}, absent: []string{`"thinking"`}, want: []string{`"max_tokens":8192`, `"temperature":0.2`}},
		{name: "default max_tokens leaves room above the budget", req: llm.Request{Model: "m", Messages: []llm.Message{user}, Temperature: &temp}, budget: 2048,
			want: []string{`"max_tokens":10240`, `"thinking":{"type":"enabled","budget_tokens":2048}`}, absent: []string{`"temperature"`}},
		{name: "budget below the minimum", req: llm.Request{Model: "m", Messages: []llm.Message{user}}, budget: 1000, wantErr: "below the minimum of 1024"},
		{name: "budget not below max_tokens", req: llm.Request{Model: "m", Messages: []llm.Message{user}, MaxTokens: 2048}, budget: 2048, wantErr: "must be greater than the thinking budget_tokens"},
		{name: "signed blocks replayed in order, unchanged", req: llm.Request{Model: "m", Messages: []llm.Message{user, signed, result}}, budget: 2048,
			want: []string{`"content":[{"type":"thinking","thinking":"plan","signature":"S1"},{"type":"redacted_thinking","data":"R1"},{"type":"tool_use"`, `"thinking":{"type":"enabled"`}},
		{name: "tool loop without thinking goes without it", req: llm.Request{Model: "m", Messages: []llm.Message{user, unsigned, result}}, budget: 2048,
			absent: []string{`"thinking"`}},
		{name: "another format's reasoning is never sent", req: llm.Request{Model: "m", Messages: []llm.Message{user, foreign, result}}, budget: 2048,
			absent: []string{`"thinking"`, "not-anthropic", "summary"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := buildRequestBody(&tt.req, defaultMaxTokens, tt.budget)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want ErrInvalidRequest with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(body), w) {
					t.Errorf("body lacks %s:\n%s", w, body)
				}
			}
			for _, w := range tt.absent {
				if strings.Contains(string(body), w) {
					t.Errorf("body has %s:\n%s", w, body)
				}
			}
		})
	}
}

func TestThinkingBudgetPerModel(t *testing.T) {
	c := thinkingConfig{budget: 4096, perModel: map[string]int{"claude-haiku": 0, "claude-opus": 8000}}
	for model, want := range map[string]int{"claude-sonnet": 4096, "claude-haiku": 0, "claude-opus": 8000} {
		if got := c.budgetFor(model); got != want {
			t.Errorf("budgetFor(%s) = %d, want %d", model, got, want)
		}
	}
}
