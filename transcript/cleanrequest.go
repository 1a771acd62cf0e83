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
	n := cleanField(&r.System)
	var k int
	r.Messages, k = cleanEach(r.Messages, from, cleanMessage)
	n += k
	r.Tools, k = cleanEach(r.Tools, 0, cleanTool)
	return n + k
}

// cleanEach cleans s[from:] with clean, which returns a cleaned copy and
// how many leaves changed. s is cloned before its first change, since it
// is usually shared; the result is the slice to keep.
func cleanEach[T any](s []T, from int, clean func(T) (T, int)) ([]T, int) {
	n, copied := 0, false
	for i := from; i < len(s); i++ {
		v, k := clean(s[i])
		if k == 0 {
			continue
		}
		if !copied {
			s, copied = slices.Clone(s), true
		}
		s[i] = v
		n += k
	}
	return s, n
}

// cleanField cleans *s in place and counts 1 when it changed.
func cleanField(s *string) int {
	c := CleanText(*s)
	if c == *s {
		return 0
	}
	*s = c
	return 1
}

// cleanMessage returns a cleaned copy of m and how many leaves changed; m's
// slices are copied before any write.
func cleanMessage(m llm.Message) (llm.Message, int) {
	var n, k int
	m.Content, n = cleanEach(m.Content, 0, func(p llm.Part) (llm.Part, int) {
		if p.Type != llm.PartText {
			return p, 0
		}
		return p, cleanField(&p.Text)
	})
	m.ToolCalls, k = cleanEach(m.ToolCalls, 0, func(c llm.ToolCall) (llm.ToolCall, int) {
		k := cleanField(&c.Name)
		if args := cleanJSONEscapes(CleanText(c.Arguments)); args != c.Arguments {
			c.Arguments = args
			k++
		}
		return c, k
	})
	n += k + cleanField(&m.ToolName)
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
	n := cleanField(&t.Name) + cleanField(&t.Description)
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
