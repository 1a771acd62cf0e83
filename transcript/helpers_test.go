package transcript

import (
	"fmt"
	"slices"
	"strings"

	"github.com/talaria-agent/talaria/llm"
)

func user(text string) llm.Message { return llm.NewText(llm.RoleUser, text) }

func asst(text string, calls ...llm.ToolCall) llm.Message {
	m := llm.NewText(llm.RoleAssistant, text)
	if text == "" {
		m.Content = nil
	}
	m.ToolCalls = calls
	return m
}

func call(id string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: "read", Arguments: `{"path":"` + id + `"}`}
}

func result(id, text string) llm.Message {
	return llm.NewToolResult(call(id), text, false)
}

func missing(id string) llm.Message {
	return llm.NewToolResult(call(id), MissingToolResult, true)
}

func image() llm.Part {
	return llm.Part{Type: llm.PartImage, MediaType: "image/png", Data: []byte{1, 2, 3}}
}

// deepClone copies msgs so a later comparison shows whether anything wrote
// through shared slices.
func deepClone(msgs []llm.Message) []llm.Message {
	if msgs == nil {
		return nil
	}
	out := make([]llm.Message, len(msgs))
	for i, m := range msgs {
		m.Content = slices.Clone(m.Content)
		for j := range m.Content {
			m.Content[j].Data = slices.Clone(m.Content[j].Data)
		}
		m.ToolCalls = slices.Clone(m.ToolCalls)
		if m.Reasoning != nil {
			r := *m.Reasoning
			m.Reasoning = &r
		}
		out[i] = m
	}
	return out
}

// validate checks the sequence invariants every provider needs.
func validate(msgs []llm.Message) error {
	if len(msgs) > 0 && msgs[0].Role != llm.RoleUser {
		return fmt.Errorf("starts with %s", msgs[0].Role)
	}
	ids := map[string]bool{}
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch m.Role {
		case llm.RoleUser:
			if i > 0 && msgs[i-1].Role == llm.RoleUser {
				return fmt.Errorf("consecutive users at %d", i)
			}
			if blank(m.Content) {
				return fmt.Errorf("empty user at %d", i)
			}
		case llm.RoleAssistant:
			if i > 0 && msgs[i-1].Role == llm.RoleAssistant {
				return fmt.Errorf("consecutive assistants at %d", i)
			}
			if len(m.ToolCalls) == 0 && blank(m.Content) {
				return fmt.Errorf("empty assistant at %d", i)
			}
			want := map[string]bool{}
			for _, c := range m.ToolCalls {
				if c.ID == "" || ids[c.ID] {
					return fmt.Errorf("empty or duplicate call id %q at %d", c.ID, i)
				}
				ids[c.ID] = true
				want[c.ID] = true
			}
			for k := range m.ToolCalls {
				j := i + 1 + k
				if j >= len(msgs) || msgs[j].Role != llm.RoleTool {
					return fmt.Errorf("call group of %d: message %d is not a tool result", i, j)
				}
				if !want[msgs[j].ToolCallID] {
					return fmt.Errorf("result %d answers %q, not an open call of %d", j, msgs[j].ToolCallID, i)
				}
				delete(want, msgs[j].ToolCallID)
			}
			i += len(m.ToolCalls)
		case llm.RoleTool:
			return fmt.Errorf("orphan tool result at %d (%q)", i, m.ToolCallID)
		default:
			return fmt.Errorf("role %q at %d", m.Role, i)
		}
	}
	return nil
}

// texts joins every message text of a role, for "nothing was lost" checks.
func texts(msgs []llm.Message, role llm.Role) string {
	var b strings.Builder
	for _, m := range msgs {
		if m.Role == role {
			b.WriteString(m.Text())
			b.WriteString("\x00")
		}
	}
	return b.String()
}
