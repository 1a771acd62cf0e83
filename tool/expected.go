package tool

import (
	"slices"
	"strconv"
	"strings"

	"github.com/talaria-agent/talaria/internal/textcut"
)

// maxExpected bounds the rendered schema summary; a huge schema is cut
// rather than flooding the model's context on every mistake.
const maxExpected = 1000

// expected renders a schema compactly for the model, e.g.
// {"path": string, "start_line"?: integer >=1, "mode"?: "a"|"b"}.
// Optional properties carry a "?".
func (s *schema) expected() string {
	var b strings.Builder
	s.render(&b, 0)
	out := b.String()
	if len(out) > maxExpected {
		out = textcut.Prefix(out, maxExpected) + "…"
	}
	return out
}

func (s *schema) render(b *strings.Builder, depth int) {
	switch {
	case s.never:
		b.WriteString("nothing")
		return
	case len(s.enumText) > 0:
		b.WriteString(strings.Join(s.enumText, "|"))
		return
	}
	if len(s.types) == 0 {
		b.WriteString("any")
		return
	}
	for i, t := range s.types {
		if i > 0 {
			b.WriteByte('|')
		}
		switch {
		case t == "object" && len(s.props) > 0 && depth < 4:
			s.renderObject(b, depth)
		case t == "array" && s.items != nil && depth < 4:
			b.WriteByte('[')
			s.items.render(b, depth+1)
			b.WriteByte(']')
		default:
			b.WriteString(t)
			if t == "integer" || t == "number" {
				s.renderRange(b)
			}
		}
	}
}

func (s *schema) renderObject(b *strings.Builder, depth int) {
	b.WriteByte('{')
	for i, k := range s.propOrder {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(k))
		if !slices.Contains(s.required, k) {
			b.WriteByte('?')
		}
		b.WriteString(": ")
		s.props[k].render(b, depth+1)
	}
	b.WriteByte('}')
}

func (s *schema) renderRange(b *strings.Builder) {
	switch {
	case s.minimum != nil && s.maximum != nil:
		b.WriteString(" " + ratText(s.minimum) + ".." + ratText(s.maximum))
	case s.minimum != nil:
		b.WriteString(" >=" + ratText(s.minimum))
	case s.maximum != nil:
		b.WriteString(" <=" + ratText(s.maximum))
	}
}
