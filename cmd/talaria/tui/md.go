package tui

import (
	"strings"
	"unicode/utf8"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// A small markdown renderer for answers as they stream: headings, code
// fences, lists, quotes, rules, tables and inline emphasis. glamour does
// more, but it links a CSS-ish style engine and a highlighter the size of
// this whole UI; answers in a terminal need this much.

// mdStyles are the styles of the renderer; plain (NO_COLOR) keeps the
// layout and drops every attribute.
type mdStyles struct {
	heading, bold, italic, code, codeBlock, quote, link, rule, dim lipgloss.Style
}

func newMDStyles() mdStyles {
	return mdStyles{
		heading:   lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("12")),
		bold:      lipgloss.NewStyle().Bold(true),
		italic:    lipgloss.NewStyle().Italic(true),
		code:      lipgloss.NewStyle().Foreground(lipgloss.Color("216")),
		codeBlock: lipgloss.NewStyle().Foreground(lipgloss.Color("252")),
		quote:     lipgloss.NewStyle().Faint(true),
		link:      lipgloss.NewStyle().Underline(true).Foreground(lipgloss.Color("39")),
		rule:      lipgloss.NewStyle().Faint(true),
		dim:       lipgloss.NewStyle().Faint(true),
	}
}

// renderMarkdown renders src for a terminal width columns wide.
func renderMarkdown(src string, width int, st mdStyles) string {
	if width < 20 {
		width = 20
	}
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	var out []string
	inCode := false
	fence := ""
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trim := strings.TrimSpace(line)
		if inCode {
			if strings.HasPrefix(trim, fence) && strings.Trim(trim, fence[:1]) == "" {
				inCode = false
				out = append(out, st.dim.Render("└"+strings.Repeat("─", min(width-1, 40))))
				continue
			}
			out = append(out, st.dim.Render("│ ")+st.codeBlock.Render(ansi.Truncate(expandTabs(line), width-2, "…")))
			continue
		}
		switch {
		case strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~"):
			inCode, fence = true, trim[:3]
			lang := strings.TrimSpace(strings.TrimLeft(trim, fence[:1]))
			head := "┌" + strings.Repeat("─", min(width-1, 40))
			if lang != "" {
				head = "┌─ " + lang + " " + strings.Repeat("─", max(0, min(width-1, 40)-len(lang)-3))
			}
			out = append(out, st.dim.Render(head))
		case trim == "":
			out = append(out, "")
		case isRule(trim):
			out = append(out, st.rule.Render(strings.Repeat("─", min(width, 60))))
		case strings.HasPrefix(trim, "#"):
			level := len(trim) - len(strings.TrimLeft(trim, "#"))
			text := strings.TrimSpace(trim[level:])
			if level > 6 || (text != "" && trim[level] != ' ') {
				out = append(out, wrap(inline(trim, st), width, "", ""))
				break
			}
			out = append(out, st.heading.Render(ansi.Wordwrap(inline(text, st), width, "")))
		case strings.HasPrefix(trim, ">"):
			text := strings.TrimSpace(strings.TrimPrefix(trim, ">"))
			out = append(out, wrap(st.quote.Render(inline(text, st)), width, st.quote.Render("▎ "), st.quote.Render("▎ ")))
		case strings.HasPrefix(trim, "|"):
			// A table: the block of consecutive lines starting with "|".
			j := i
			for j < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[j]), "|") {
				j++
			}
			out = append(out, renderTable(lines[i:j], width, st)...)
			i = j - 1
		default:
			indent := len(line) - len(strings.TrimLeft(line, " \t"))
			pad := strings.Repeat(" ", min(indent, 8))
			if marker, rest, ok := listItem(trim); ok {
				first := pad + marker + " "
				out = append(out, wrap(inline(rest, st), width, first, strings.Repeat(" ", utf8.RuneCountInString(first))))
				break
			}
			out = append(out, wrap(inline(trim, st), width, pad, pad))
		}
	}
	return strings.Join(out, "\n")
}

func expandTabs(s string) string { return strings.ReplaceAll(s, "\t", "    ") }

func isRule(s string) bool {
	if len(s) < 3 {
		return false
	}
	c := s[0]
	if c != '-' && c != '*' && c != '_' {
		return false
	}
	return strings.Trim(strings.ReplaceAll(s, " ", ""), string(c)) == ""
}

// listItem splits "- text", "* text", "+ text" and "12. text".
func listItem(s string) (marker, rest string, ok bool) {
	if len(s) >= 2 && (s[0] == '-' || s[0] == '*' || s[0] == '+') && s[1] == ' ' {
		rest = strings.TrimSpace(s[2:])
		if strings.HasPrefix(rest, "[ ] ") {
			return "☐", rest[4:], true
		}
		if strings.HasPrefix(rest, "[x] ") || strings.HasPrefix(rest, "[X] ") {
			return "☑", rest[4:], true
		}
		return "•", rest, true
	}
	n := 0
	for n < len(s) && n < 4 && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n > 0 && n+1 < len(s) && (s[n] == '.' || s[n] == ')') && s[n+1] == ' ' {
		return s[:n+1], strings.TrimSpace(s[n+2:]), true
	}
	return "", "", false
}

// wrap word-wraps styled text to width, the first line after first and
// the others after rest.
func wrap(s string, width int, first, rest string) string {
	w := width - ansi.StringWidth(first)
	if w < 10 {
		w = 10
	}
	lines := strings.Split(ansi.Wrap(s, w, ""), "\n")
	for i := range lines {
		if i == 0 {
			lines[i] = first + lines[i]
		} else {
			lines[i] = rest + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

// inline renders `code`, **bold**, __bold__, *italic*, _italic_ and
// [text](url). An unclosed marker stays as typed: mid-stream the closing
// half may not have arrived yet.
func inline(s string, st mdStyles) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && strings.IndexByte("\\`*_[]()#+-.!|", s[i+1]) >= 0:
			b.WriteByte(s[i+1])
			i += 2
			continue
		case c == '`':
			if j := strings.IndexByte(s[i+1:], '`'); j >= 0 {
				b.WriteString(st.code.Render(s[i+1 : i+1+j]))
				i += j + 2
				continue
			}
		case (c == '*' || c == '_') && i+1 < len(s) && s[i+1] == c:
			m := s[i : i+2]
			if j := strings.Index(s[i+2:], m); j > 0 {
				b.WriteString(st.bold.Render(inline(s[i+2:i+2+j], st)))
				i += j + 4
				continue
			}
		case c == '*' || (c == '_' && (i == 0 || !isWord(s[i-1]))):
			if j := strings.IndexByte(s[i+1:], c); j > 0 && s[i+1] != ' ' && s[i+j] != ' ' &&
				(c == '*' || i+j+2 >= len(s) || !isWord(s[i+j+2])) {
				b.WriteString(st.italic.Render(inline(s[i+1:i+1+j], st)))
				i += j + 2
				continue
			}
		case c == '[':
			if text, url, n, ok := link(s[i:]); ok {
				b.WriteString(st.link.Render(text))
				if url != text {
					b.WriteString(st.dim.Render(" (" + url + ")"))
				}
				i += n
				continue
			}
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

func isWord(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// link parses "[text](url)" at the start of s.
func link(s string) (text, url string, n int, ok bool) {
	end := strings.Index(s, "](")
	if end < 1 || strings.IndexByte(s[1:end], '[') >= 0 {
		return "", "", 0, false
	}
	close := strings.IndexByte(s[end+2:], ')')
	if close < 0 {
		return "", "", 0, false
	}
	return s[1:end], s[end+2 : end+2+close], end + 3 + close, true
}

// renderTable lays out a markdown table with columns padded to their
// widest cell; the delimiter row becomes a rule.
func renderTable(rows []string, width int, st mdStyles) []string {
	var cells [][]string
	sep := -1
	for i, r := range rows {
		r = strings.TrimSpace(r)
		r = strings.TrimSuffix(strings.TrimPrefix(r, "|"), "|")
		parts := strings.Split(r, "|")
		isSep := true
		for j := range parts {
			parts[j] = strings.TrimSpace(parts[j])
			if strings.Trim(parts[j], ":-") != "" || parts[j] == "" {
				isSep = false
			}
		}
		if isSep && sep < 0 {
			sep = i
		}
		for j := range parts {
			parts[j] = inline(parts[j], st)
		}
		cells = append(cells, parts)
	}
	var widths []int
	for i, row := range cells {
		if i == sep {
			continue
		}
		for j, c := range row {
			if j >= len(widths) {
				widths = append(widths, 0)
			}
			widths[j] = max(widths[j], ansi.StringWidth(c))
		}
	}
	var out []string
	for i, row := range cells {
		var b strings.Builder
		if i == sep {
			for j, w := range widths {
				if j > 0 {
					b.WriteString("─┼─")
				}
				b.WriteString(strings.Repeat("─", w))
			}
			out = append(out, st.dim.Render(ansi.Truncate(b.String(), width, "")))
			continue
		}
		for j, w := range widths {
			if j > 0 {
				b.WriteString(st.dim.Render(" │ "))
			}
			c := ""
			if j < len(row) {
				c = row[j]
			}
			if i < sep {
				c = st.bold.Render(c)
			}
			b.WriteString(c + strings.Repeat(" ", w-ansi.StringWidth(c)))
		}
		out = append(out, ansi.Truncate(strings.TrimRight(b.String(), " "), width, "…"))
	}
	return out
}
