package transcript

import (
	"strings"

	"github.com/talaria-agent/talaria/llm"
)

// blank reports whether parts carry nothing a provider would accept as
// content: no image and no text beyond white space (Anthropic rejects
// whitespace-only text blocks).
func blank(parts []llm.Part) bool {
	for _, p := range parts {
		if p.Type != llm.PartText || strings.TrimSpace(p.Text) != "" {
			return false
		}
	}
	return true
}

// joinParts concatenates two messages' parts into a new slice. When a text
// part meets a text part they become one, joined with a blank line, so a
// merged turn reads as one message; blank text on either side is dropped.
func joinParts(a, b []llm.Part) []llm.Part {
	out := make([]llm.Part, 0, len(a)+len(b))
	out = append(out, a...)
	for k, p := range b {
		n := len(out)
		if k == 0 && p.Type == llm.PartText && n > 0 && out[n-1].Type == llm.PartText {
			last := &out[n-1] // out is ours: writing to it leaves a and b alone
			switch {
			case strings.TrimSpace(p.Text) == "":
			case strings.TrimSpace(last.Text) == "":
				last.Text = p.Text
			default:
				last.Text = last.Text + "\n\n" + p.Text
			}
			continue
		}
		out = append(out, p)
	}
	return out
}
