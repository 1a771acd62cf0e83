// Package transcriptgen makes realistic transcript rows for benchmarks and
// generated databases: user prompts, assistant tool calls, tool results and
// answers, in that repeating order.
package transcriptgen

import (
	"fmt"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// Row is the i-th row. Every fourth row (i%4 == 3) is an answer containing
// "the"; prompts and answers together hold "the" in half the rows.
func Row(i int) *store.Message {
	switch i % 4 {
	case 0:
		return &store.Message{TurnID: "t", Message: llm.NewText(llm.RoleUser, fmt.Sprintf("Please look at file %d and fix the bug in it.", i))}
	case 1:
		return &store.Message{TurnID: "t", Message: llm.Message{Role: llm.RoleAssistant,
			ToolCalls: []llm.ToolCall{{ID: fmt.Sprint("call_", i), Name: "read_file", Arguments: fmt.Sprintf(`{"path":"src/f%d.go"}`, i)}}},
			FinishReason: llm.FinishToolCalls, Usage: llm.Usage{InputTokens: 1000, OutputTokens: 40, Reported: true}}
	case 2:
		return &store.Message{TurnID: "t", Message: llm.NewToolResult(llm.ToolCall{ID: fmt.Sprint("call_", i-1), Name: "read_file"},
			fmt.Sprintf("package f\n\nfunc F%d() int {\n\treturn %d\n}\n", i, i), false)}
	default:
		return &store.Message{TurnID: "t", Message: llm.NewText(llm.RoleAssistant, "Fixed: the function now returns the right value."),
			FinishReason: llm.FinishStop}
	}
}
