package tui

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// Approval is a question about a tool that changes things.
type Approval struct {
	Tool    string
	Summary string // the key argument: a path, a command
	Detail  string // a unified diff (lines starting with + - @@) or the command in full
	Note    string // e.g. the sandbox mode a command runs in
	// Prefix, when set, is offered as "always for commands starting with
	// Prefix" (p).
	Prefix string
	// Subject is what "always" remembers for a prefix approval: the
	// command the prefix is matched against.
	Subject string
}

// Decision is the user's answer.
type Decision int

const (
	Deny Decision = iota
	Allow
	AllowTool   // always, for this tool, in this chat
	AllowPrefix // always, for commands starting with Approval.Prefix
)

// approvalMemory keeps the "always" answers of this chat.
type approvalMemory struct {
	mu       sync.Mutex
	tools    map[string]bool
	prefixes []string // "tool\x00prefix"
}

func (m *approvalMemory) allowed(a Approval) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tools[a.Tool] {
		return true
	}
	for _, p := range m.prefixes {
		tool, prefix, _ := strings.Cut(p, "\x00")
		if tool == a.Tool && a.Subject != "" && hasWordPrefix(a.Subject, prefix) {
			return true
		}
	}
	return false
}

// hasWordPrefix: "go test" covers "go test ./x", not "go testify".
func hasWordPrefix(s, prefix string) bool {
	return s == prefix || strings.HasPrefix(s, prefix+" ")
}

func (m *approvalMemory) remember(a Approval, d Decision) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch d {
	case AllowTool:
		m.tools[a.Tool] = true
	case AllowPrefix:
		m.prefixes = append(m.prefixes, a.Tool+"\x00"+a.Prefix)
	}
}

// Approve asks the user about a, in place of the input, and waits for the
// answer; an "always" answered before says yes without asking. ctx ending
// (the turn stopped) denies.
func (u *UI) Approve(ctx context.Context, a Approval) (Decision, string) {
	if u.approvals.allowed(a) {
		return Allow, ""
	}
	reply := make(chan Decision, 1)
	u.send(approvalMsg{a: a, reply: reply})
	select {
	case <-ctx.Done():
		u.send(approvalGoneMsg{})
		return Deny, "The turn was interrupted before the user answered."
	case d := <-reply:
		u.approvals.remember(a, d)
		if d == Deny {
			return Deny, "The user declined this call of " + a.Tool + ". Do not retry it unchanged; ask the user or take another approach."
		}
		return d, ""
	}
}

type approvalGoneMsg struct{}

// approvalView is the question, with the diff coloured.
func (m *model) approvalView() string {
	a := m.approval.a
	var b strings.Builder
	b.WriteString(m.st.warn.Render("Allow "+a.Tool+"?") + " " + a.Summary + "\n")
	if a.Note != "" {
		b.WriteString(m.st.dim.Render(a.Note) + "\n")
	}
	if a.Detail != "" {
		lines := strings.Split(strings.TrimRight(a.Detail, "\n"), "\n")
		room := max(4, m.height-8)
		if len(lines) > room {
			more := len(lines) - room + 1
			lines = append(lines[:room-1], fmt.Sprintf("… %d more lines", more))
		}
		for _, l := range lines {
			b.WriteString(m.diffLine(l) + "\n")
		}
	}
	keys := "[y]es  [n]o  [a]lways for " + a.Tool + " in this chat"
	if a.Prefix != "" {
		keys += "  [p] always for «" + a.Prefix + " …»"
	}
	b.WriteString(m.st.accent.Render(keys) + m.st.dim.Render("  (Esc: no)"))
	return b.String()
}

func (m *model) diffLine(l string) string {
	l = truncate(expandTabs(l), m.width)
	switch {
	case strings.HasPrefix(l, "+++") || strings.HasPrefix(l, "---"):
		return m.st.bold.Render(l)
	case strings.HasPrefix(l, "+"):
		return m.st.add.Render(l)
	case strings.HasPrefix(l, "-"):
		return m.st.del.Render(l)
	case strings.HasPrefix(l, "@@"):
		return m.st.hunk.Render(l)
	}
	return l
}

// UnifiedDiff is a unified diff of two texts with three lines of context,
// headed by name. Large inputs fall back to "all removed, all added".
func UnifiedDiff(name, before, after string) string {
	a, b := splitLines(before), splitLines(after)
	ops := diffLines(a, b)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", name, name)
	const ctx = 3
	// Group the edits into hunks with ctx lines around them.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(0, i-ctx)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			j := end
			for j < len(ops) && ops[j].kind == ' ' {
				j++
			}
			if j == len(ops) || j-end > 2*ctx {
				end = min(len(ops), end+ctx)
				break
			}
			end = j
		}
		aStart, bStart, aN, bN := ops[start].a, ops[start].b, 0, 0
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				aN++
			}
			if o.kind != '-' {
				bN++
			}
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", aStart+1, aN, bStart+1, bN)
		for _, o := range ops[start:end] {
			out.WriteByte(o.kind)
			out.WriteString(o.text)
			out.WriteByte('\n')
		}
		i = end
	}
	return out.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

type diffOp struct {
	kind byte // ' ', '-', '+'
	text string
	a, b int // line indexes in before and after at this op
}

// diffLines is a longest-common-subsequence line diff; past maxDiffCells
// it gives up on alignment (a few-line edit of a huge file is rare in an
// approval, and the table must stay small).
func diffLines(a, b []string) []diffOp {
	const maxDiffCells = 4 << 20
	var ops []diffOp
	if len(a)*len(b) > maxDiffCells {
		for i, l := range a {
			ops = append(ops, diffOp{'-', l, i, 0})
		}
		for j, l := range b {
			ops = append(ops, diffOp{'+', l, len(a), j})
		}
		return ops
	}
	n, m := len(a), len(b)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, diffOp{' ', a[i], i, j})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, diffOp{'-', a[i], i, j})
			i++
		default:
			ops = append(ops, diffOp{'+', b[j], i, j})
			j++
		}
	}
	return ops
}
