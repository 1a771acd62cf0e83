package compact

import (
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// pairs indexes where each tool call is made and answered, so a cut through
// the transcript can be moved until no call is separated from its result.
type pairs struct {
	call   map[string]int // call id → index of the assistant row
	result map[string]int // call id → index of its (last) result row
}

func indexPairs(rows []store.Message) pairs {
	p := pairs{call: map[string]int{}, result: map[string]int{}}
	for i := range rows {
		m := &rows[i]
		switch {
		case m.Role == llm.RoleAssistant:
			for _, c := range m.ToolCalls {
				if c.ID != "" {
					p.call[c.ID] = i
				}
			}
		case m.Role == llm.RoleTool && m.ToolCallID != "":
			p.result[m.ToolCallID] = i
		}
	}
	return p
}

// later moves cut i (rows[:i] | rows[i:]) forward past the results of every
// call made before it.
func (p pairs) later(i int) int {
	return p.settle(i, func(_, result int) int { return result + 1 })
}

// earlier moves cut i back before the call of every result after it.
func (p pairs) earlier(i int) int {
	return p.settle(i, func(call, _ int) int { return call })
}

// settle moves cut i with move for as long as a call stands before it and
// its result after it.
func (p pairs) settle(i int, move func(call, result int) int) int {
	for changed := true; changed; {
		changed = false
		for id, a := range p.call {
			if r, ok := p.result[id]; ok && a < i && r >= i {
				i, changed = move(a, r), true
			}
		}
	}
	return i
}

// headEnd returns the end of the protected head: the first exchange, from
// the start through the first assistant row after the first user row, with
// that row's tool results. It is 0 when an earlier summary precedes the
// first user row (that summary must be merged, not kept), and len(rows) when
// no assistant has answered yet.
func headEnd(rows []store.Message, p pairs) int {
	u := -1
	for i := range rows {
		if rows[i].Kind == store.RowSummary {
			return 0
		}
		if rows[i].Role == llm.RoleUser {
			u = i
			break
		}
	}
	if u < 0 {
		return 0
	}
	for i := u + 1; i < len(rows); i++ {
		if rows[i].Role == llm.RoleAssistant {
			return p.later(i + 1)
		}
	}
	return len(rows)
}

// tailStart returns the start of the protected tail: the last rows whose
// cost fits budget, but at least minRows of them, and always from the last
// real user row onward (unless that row is in the head, which keeps it
// anyway); then moved back so no tool call loses its result. It may lie
// inside the head when the transcript is short; rows from it on are never
// pruned.
func tailStart(rows []store.Message, costs []int, budget, minRows, head int, p pairs) int {
	t, used := len(rows), 0
	for t > 0 && used+costs[t-1] <= budget {
		used += costs[t-1]
		t--
	}
	t = min(t, max(len(rows)-minRows, 0))
	for i := len(rows) - 1; i >= head; i-- {
		if isRealUser(&rows[i]) {
			t = min(t, i)
			break
		}
	}
	return p.earlier(t)
}
