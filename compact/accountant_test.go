package compact

import (
	"encoding/json"
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

func TestAccountant(t *testing.T) {
	tool := llm.ToolSpec{Name: "shell", Description: "Run a shell command and return its output.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}`)}
	call := llm.ToolCall{ID: "call_1", Name: "shell", Arguments: `{"cmd":"ls"}`}
	base := func() *llm.Request {
		return &llm.Request{Model: "gpt-4o", System: "You are an agent.", Tools: []llm.ToolSpec{tool},
			Messages: []llm.Message{
				llm.NewText(llm.RoleUser, "list the files"),
				{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}},
				llm.NewToolResult(call, "a.go\nb.go", false),
			}}
	}
	added := []llm.Message{llm.NewText(llm.RoleAssistant, "There are two files."), llm.NewText(llm.RoleUser, "thanks")}
	reported := llm.Usage{InputTokens: 400, CacheReadTokens: 500, CacheWriteTokens: 100, OutputTokens: 30, Reported: true}

	tests := []struct {
		name    string
		observe bool
		usage   llm.Usage
		reset   bool
		next    func() *llm.Request
		want    func(r *llm.Request) int
	}{
		{"nothing observed estimates from scratch", false, reported, false, base,
			func(r *llm.Request) int { return EstimateRequest(r) }},
		{"unreported usage is ignored", true, llm.Usage{InputTokens: 999}, false, base,
			func(r *llm.Request) int { return EstimateRequest(r) }},
		{"same request is the reported count", true, reported, false, base,
			func(*llm.Request) int { return 1000 }},
		{"extending request adds the new messages", true, reported, false,
			func() *llm.Request { r := base(); r.Messages = append(r.Messages, added...); return r },
			func(*llm.Request) int { return 1000 + EstimateMessages(added) }},
		{"tools removed are subtracted", true, reported, false,
			func() *llm.Request { r := base(); r.Tools = nil; return r },
			func(*llm.Request) int { return 1000 - EstimateTools([]llm.ToolSpec{tool}) }},
		{"edited shared message diverges", true, reported, false,
			func() *llm.Request {
				r := base()
				r.Messages[2] = llm.NewToolResult(call, "a.go\nb.go\nc.go", false)
				r.Messages = append(r.Messages, added...)
				return r
			},
			func(r *llm.Request) int { return EstimateRequest(r) }},
		{"shorter request diverges", true, reported, false,
			func() *llm.Request { r := base(); r.Messages = r.Messages[:1]; return r },
			func(r *llm.Request) int { return EstimateRequest(r) }},
		{"system change diverges", true, reported, false,
			func() *llm.Request { r := base(); r.System = "You are a different agent."; return r },
			func(r *llm.Request) int { return EstimateRequest(r) }},
		{"model change diverges", true, reported, false,
			func() *llm.Request { r := base(); r.Model = "claude-sonnet-4-5"; return r },
			func(r *llm.Request) int { return EstimateRequest(r) }},
		{"reset forgets", true, reported, true, base,
			func(r *llm.Request) int { return EstimateRequest(r) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Accountant
			if tt.observe {
				a.Observe(base(), tt.usage)
			}
			if tt.reset {
				a.Reset()
			}
			r := tt.next()
			if got, want := a.Estimate(r), tt.want(r); got != want {
				t.Fatalf("Estimate = %d, want %d", got, want)
			}
		})
	}

	t.Run("last reported is the whole prompt", func(t *testing.T) {
		var a Accountant
		a.Observe(base(), reported)
		if got := a.LastReported(); got != 1000 {
			t.Fatalf("LastReported = %d, want 1000", got)
		}
		a.Reset()
		if got := a.LastReported(); got != 0 {
			t.Fatalf("LastReported after Reset = %d, want 0", got)
		}
	})
	t.Run("reported count beats a bad estimate", func(t *testing.T) {
		// A tokenizer the heuristic underrates: the provider's count wins
		// for the prefix.
		var a Accountant
		r := base()
		a.Observe(r, llm.Usage{InputTokens: 50000, Reported: true})
		if got := a.Estimate(r); got != 50000 {
			t.Fatalf("Estimate = %d, want 50000 (own estimate %d)", got, EstimateRequest(r))
		}
	})
}
