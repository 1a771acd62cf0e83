package transcript

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/talaria-agent/talaria/llm"
)

// CleanRequest makes every text leaf of r valid UTF-8 with CleanText: the
// system prompt, message text parts, tool-result names, tool-call names and
// arguments, reasoning text, and tool names, descriptions and parameter
// schemas. Lone-surrogate \u escapes in argument and schema JSON become
// \ufffd as well. It returns how many leaves changed.
//
// r is updated in place, but copy-on-write: a changed message, part list,
// call list or tool list is replaced by a copy in r, never written through,
// because those slices are usually shared with stored rows or with a tool
// registry other turns read concurrently. Opaque reasoning signatures are
// never touched: they must be replayed byte for byte.
func CleanRequest(r *llm.Request) int { return CleanRequestFrom(r, 0) }

// CleanRequestFrom is CleanRequest for a request whose first from messages
// are already clean (a Projector's stable prefix): they are not looked at,
// so a call costs what was added, not the whole history.
func CleanRequestFrom(r *llm.Request, from int) int {
	n := 0
	if s := CleanText(r.System); s != r.System {
		r.System = s
		n++
	}
	msgsCopied := false
	for i := from; i < len(r.Messages); i++ {
		m, k := cleanMessage(r.Messages[i])
		if k == 0 {
			continue
		}
		if !msgsCopied {
			r.Messages, msgsCopied = slices.Clone(r.Messages), true
		}
		r.Messages[i] = m
		n += k
	}
	toolsCopied := false
	for i := range r.Tools {
		t, k := cleanTool(r.Tools[i])
		if k == 0 {
			continue
		}
		if !toolsCopied {
			r.Tools, toolsCopied = slices.Clone(r.Tools), true
		}
		r.Tools[i] = t
		n += k
	}
	return n
}

// cleanMessage returns a cleaned copy of m and how many leaves changed; m's
// slices are copied before any write.
func cleanMessage(m llm.Message) (llm.Message, int) {
	n := 0
	partsCopied := false
	for j, p := range m.Content {
		if p.Type != llm.PartText {
			continue
		}
		s := CleanText(p.Text)
		if s == p.Text {
			continue
		}
		if !partsCopied {
			m.Content, partsCopied = slices.Clone(m.Content), true
		}
		m.Content[j].Text = s
		n++
	}
	callsCopied := false
	for j, c := range m.ToolCalls {
		name, args := CleanText(c.Name), cleanJSONEscapes(CleanText(c.Arguments))
		if name == c.Name && args == c.Arguments {
			continue
		}
		if !callsCopied {
			m.ToolCalls, callsCopied = slices.Clone(m.ToolCalls), true
		}
		if name != c.Name {
			m.ToolCalls[j].Name = name
			n++
		}
		if args != c.Arguments {
			m.ToolCalls[j].Arguments = args
			n++
		}
	}
	if s := CleanText(m.ToolName); s != m.ToolName {
		m.ToolName = s
		n++
	}
	// Signed reasoning (thinking with a signature, encrypted items) goes
	// back exactly as the provider sent it: cleaning one character of it
	// invalidates the signature and the whole request is rejected.
	if m.Reasoning != nil && !m.Reasoning.Signed() {
		if s := CleanText(m.Reasoning.Text); s != m.Reasoning.Text {
			rs := *m.Reasoning
			rs.Text = s
			m.Reasoning = &rs
			n++
		}
	}
	return m, n
}

// cleanTool returns a cleaned copy of t and how many leaves changed.
func cleanTool(t llm.ToolSpec) (llm.ToolSpec, int) {
	n := 0
	if s := CleanText(t.Name); s != t.Name {
		t.Name = s
		n++
	}
	if s := CleanText(t.Description); s != t.Description {
		t.Description = s
		n++
	}
	// The utf8/escape check first spares a string copy of every schema on
	// every request.
	if len(t.Parameters) > 0 && (!utf8.Valid(t.Parameters) || bytes.Contains(t.Parameters, []byte(`\u`))) {
		old := string(t.Parameters)
		if s := cleanJSONEscapes(CleanText(old)); s != old {
			t.Parameters = json.RawMessage(s)
			n++
		}
	}
	return t, n
}
