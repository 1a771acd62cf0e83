package compact

import (
	"fmt"
	"strings"

	"github.com/talaria-agent/talaria/internal/textcut"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// PrunedPrefix starts the text that replaces a pruned tool output.
const PrunedPrefix = "[tool output pruned to save context: "

// firstLineMax bounds the first line kept in a prune marker, in bytes.
const firstLineMax = 160

// prunable reports whether a row is a tool result large enough to prune.
func prunable(m *store.Message, over int) bool {
	if m.Role != llm.RoleTool || m.Kind.DisplayOnly() {
		return false
	}
	t := wireText(m)
	return len(t) > over && !strings.HasPrefix(t, PrunedPrefix)
}

// pruneMarker describes a pruned output by tool name, size and first line,
// enough for the model to know what it had and to ask for it again.
func pruneMarker(tool, text string) string {
	if tool == "" {
		tool = "tool"
	}
	first, _, _ := strings.Cut(strings.TrimLeft(text, " \t\r\n"), "\n")
	first = truncateRunes(strings.TrimSpace(first), firstLineMax)
	lines := strings.Count(text, "\n") + 1
	return fmt.Sprintf("%s%s returned %d bytes in %d lines; first line: %s]", PrunedPrefix, tool, len(text), lines, first)
}

// prune replaces a tool row's output with its marker. It reports false, and
// leaves the row alone, when the marker would not be smaller.
func prune(m *store.Message, cost int) (newCost int, ok bool) {
	marker := pruneMarker(m.ToolName, wireText(m))
	p := *m
	p.Content = []llm.Part{llm.TextPart(marker)}
	p.APIContent = ""
	c := rowCost(&p)
	if c >= cost {
		return cost, false
	}
	*m = p
	return c, true
}

// truncateRunes cuts s to at most n bytes without splitting a character,
// adding an ellipsis when it cut.
func truncateRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return textcut.Prefix(s, n) + "…"
}

// clip keeps the start and end of a long text, saying how much was left out
// in between; both cuts respect character boundaries.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := cutMiddle(s, n)
	return fmt.Sprintf("%s\n… [%d bytes omitted] …\n%s", s[:head], tail-head, s[tail:])
}

// cutMiddle is where a text longer than n bytes is cut to keep about n:
// s[:head] (two thirds) and s[tail:] (the rest), both at character
// boundaries.
func cutMiddle(s string, n int) (head, tail int) {
	head = len(textcut.Prefix(s, n*2/3))
	return head, len(s) - len(textcut.Suffix(s, n-head))
}
