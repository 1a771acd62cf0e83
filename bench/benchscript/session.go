package benchscript

import (
	"fmt"
	"strings"

	"github.com/talaria-agent/talaria/llm"
)

// SessionMessage is message i of a long tool-using session in the rhythm
// of real work: a request, a tool call, its ~1.2 KB result, an answer. The
// long-session benchmarks build their histories from it.
func SessionMessage(i int) llm.Message {
	id := fmt.Sprint("call_", i/4)
	switch i % 4 {
	case 0:
		return llm.NewText(llm.RoleUser, fmt.Sprintf("Please look at internal/pkg%d/file.go and fix the off-by-one in the loop.", i))
	case 1:
		m := llm.NewText(llm.RoleAssistant, "Let me read the file first.")
		m.ToolCalls = []llm.ToolCall{{ID: id, Name: "read_file", Arguments: fmt.Sprintf(`{"path":"internal/pkg%d/file.go"}`, i)}}
		return m
	case 2:
		body := strings.Repeat("func F(xs []int) int {\n\tn := 0\n\tfor i := 0; i <= len(xs); i++ {\n\t\tn += xs[i]\n\t}\n\treturn n\n}\n", 16)
		return llm.NewToolResult(llm.ToolCall{ID: id, Name: "read_file"}, body, false)
	default:
		return llm.NewText(llm.RoleAssistant, "Fixed: the loop ran one step past the end of the slice; it now stops at len(xs)-1.")
	}
}
