package tui

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// SessionItem is one session offered by the picker.
type SessionItem struct {
	ID       string
	ParentID string // a subagent's parent: shown indented under it
	Title    string // the title, else the first message
	Model    string
	Updated  time.Time
}

// pickRow is an item placed in the tree.
type pickRow struct {
	item  SessionItem
	depth int
}

// picker is the session list: type to search, Up/Down, Enter, Esc.
type picker struct {
	items []SessionItem
	q     string
	rows  []pickRow
	sel   int
	// loading: the list is on its way; keys typed meanwhile search it, and
	// an Enter then (chosen) picks the first row once it is there.
	loading, chosen bool
}

func newPicker(items []SessionItem) *picker {
	p := &picker{items: items}
	p.filter()
	return p
}

func (p *picker) filter() {
	p.rows = treeRows(p.items, p.q)
	p.sel = min(p.sel, max(len(p.rows)-1, 0))
}

// treeRows orders items as a tree: top-level sessions newest first, each
// followed by its subagents (oldest first, as they were spawned), indented.
// With a query, an item stays when it or one of its descendants matches
// (title, id or model, case-insensitive), so a match keeps its context.
func treeRows(items []SessionItem, q string) []pickRow {
	byID := make(map[string]bool, len(items))
	for _, it := range items {
		byID[it.ID] = true
	}
	kids := map[string][]SessionItem{}
	var tops []SessionItem
	for _, it := range items {
		if it.ParentID != "" && byID[it.ParentID] && it.ParentID != it.ID {
			kids[it.ParentID] = append(kids[it.ParentID], it)
		} else {
			tops = append(tops, it)
		}
	}
	sort.SliceStable(tops, func(i, j int) bool { return tops[i].Updated.After(tops[j].Updated) })
	for _, k := range kids {
		sort.SliceStable(k, func(i, j int) bool { return k[i].Updated.Before(k[j].Updated) })
	}
	q = strings.ToLower(strings.TrimSpace(q))
	matches := func(it SessionItem) bool {
		return q == "" || strings.Contains(strings.ToLower(it.Title), q) ||
			strings.Contains(strings.ToLower(it.ID), q) || strings.Contains(strings.ToLower(it.Model), q)
	}
	var rows []pickRow
	seen := map[string]bool{}
	// walk adds it and its subtree when something in it matches; it
	// reports whether it did.
	var walk func(it SessionItem, depth int) []pickRow
	walk = func(it SessionItem, depth int) []pickRow {
		if seen[it.ID] {
			return nil // a cycle in bad data must not loop
		}
		seen[it.ID] = true
		var sub []pickRow
		for _, k := range kids[it.ID] {
			sub = append(sub, walk(k, depth+1)...)
		}
		if !matches(it) && len(sub) == 0 {
			return nil
		}
		return append([]pickRow{{it, depth}}, sub...)
	}
	for _, t := range tops {
		rows = append(rows, walk(t, 0)...)
	}
	return rows
}

// TreeRow is a session placed in the picker's tree, for the line mode's
// numbered list.
type TreeRow struct {
	SessionItem
	Depth int
}

// SessionTree is the picker's order of items (see treeRows).
func SessionTree(items []SessionItem, q string) []TreeRow {
	rows := treeRows(items, q)
	out := make([]TreeRow, len(rows))
	for i, r := range rows {
		out[i] = TreeRow{r.item, r.depth}
	}
	return out
}

// Age says how long ago t was, as the picker shows it.
func Age(now, t time.Time) string { return age(now, t) }

// age says how long ago t was, in one short word.
func age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// pickerView draws the list around the selection, at most room rows.
func (m *model) pickerView() string {
	p := m.picker
	var b strings.Builder
	b.WriteString(m.st.bold.Render("Resume a session") + m.st.dim.Render("  type to search · ↑↓ · Enter resumes · Esc cancels") + "\n")
	b.WriteString(m.st.accent.Render("search: ") + p.q + "\n")
	if p.loading {
		b.WriteString(m.st.dim.Render("  loading…"))
		return b.String()
	}
	if len(p.rows) == 0 {
		b.WriteString(m.st.dim.Render("  no session matches"))
		return b.String()
	}
	room := max(3, m.height-8)
	first := 0
	if p.sel >= room {
		first = p.sel - room + 1
	}
	now := m.now()
	for i := first; i < len(p.rows) && i < first+room; i++ {
		r := p.rows[i]
		mark := "  "
		if i == p.sel {
			mark = m.st.accent.Render("› ")
		}
		indent := strings.Repeat("  ", r.depth)
		if r.depth > 0 {
			indent = strings.Repeat("  ", r.depth-1) + "└ "
		}
		title := r.item.Title
		if title == "" {
			title = "(no message yet)"
		}
		meta := fmt.Sprintf("  %s · %s · %s", age(now, r.item.Updated), r.item.Model, r.item.ID)
		line := mark + indent + truncate(strings.ReplaceAll(title, "\n", " "), max(10, m.width-ansi.StringWidth(indent+meta)-2)) + m.st.dim.Render(meta)
		b.WriteString(truncate(line, m.width))
		if i < len(p.rows)-1 && i < first+room-1 {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// pickerKey handles a key while the picker is open.
func (m *model) pickerKey(s string, text string) (*model, string) {
	p := m.picker
	switch s {
	case "esc", "ctrl+c":
		m.picker = nil
		return m, ""
	case "enter":
		if p.loading {
			p.chosen = true
			return m, ""
		}
		if len(p.rows) == 0 {
			return m, ""
		}
		id := p.rows[p.sel].item.ID
		m.picker = nil
		return m, id
	case "up", "ctrl+p":
		p.sel = max(p.sel-1, 0)
	case "down", "ctrl+n":
		p.sel = min(p.sel+1, max(len(p.rows)-1, 0))
	case "backspace", "ctrl+h":
		if p.q != "" {
			r := []rune(p.q)
			p.q = string(r[:len(r)-1])
			p.filter()
		}
	default:
		if text != "" {
			p.q += text
			p.sel = 0
			p.filter()
		}
	}
	return m, ""
}
