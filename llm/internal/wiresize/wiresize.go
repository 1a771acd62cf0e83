// Package wiresize estimates the encoded size of messages, for the
// adapters to size their body buffers. It lives apart from package wire,
// which package llm itself imports.
package wiresize

import "github.com/talaria-agent/talaria/llm"

// Messages is about the encoded size of msgs in any of the wire formats:
// their text, ids, arguments, images (base64) and replayed reasoning, plus
// an allowance for the JSON around each piece and an eighth for escapes.
// It only sizes buffers, so one estimate serves every adapter: a few bytes
// too many cost nothing, too few a copy of the body.
func Messages(msgs []llm.Message) int {
	n := 64
	for i := range msgs {
		m := &msgs[i]
		n += 96 + len(m.ToolCallID) + len(m.ToolName)
		for _, p := range m.Content {
			n += len(p.Text) + len(p.URL) + len(p.Data)*4/3 + 64
		}
		for _, c := range m.ToolCalls {
			n += len(c.ID) + len(c.Name) + len(c.Arguments) + 96
		}
		if r := m.Reasoning; r != nil {
			n += len(r.Text) + len(r.Signature) + len(r.Redacted) + 64
			for _, b := range r.Blocks {
				n += len(b.Thinking) + len(b.Signature) + len(b.Data) + 64
			}
			for _, it := range r.Items {
				n += len(it)
			}
		}
	}
	return n + n/8
}
