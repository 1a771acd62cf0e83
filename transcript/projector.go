package transcript

import (
	"slices"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// Projector is Project + CleanRequest's message cleaning for a session
// whose rows grow between calls: it keeps the projected, repaired and
// cleaned messages of a prefix of the rows that later rows cannot change,
// and projects only the rows after it. Its result is exactly what
// Project followed by CleanRequest gives for the same rows (the tests
// compare the two on random transcripts), at a cost that depends on what
// was added, not on the session's length.
//
// The prefix ends before an assistant message that follows a user message
// or a tool result: Repair never carries anything across such a point (a
// later result pairs with a later call, users merge only with users, and
// assistants only with an assistant without calls), except tool-call id
// renames, which may look ahead; a part whose repair renamed an id is
// therefore never made part of the prefix.
//
// The prefix is checked on every call against the rows given (IDs,
// archived flag, kind), so a compaction, a rotation or a deletion of
// earlier rows starts over. A Projector is not safe for concurrent use;
// the zero value is ready.
type Projector struct {
	keys []rowKey // rows[:len(keys)] that the prefix was projected from
	// next is the row after them, the assistant message the prefix was
	// cut before: the cut holds only while it is still there.
	next rowKey
	msgs []llm.Message // the prefix's messages: repaired and cleaned
	// seen and all are the id allocator's state after the prefix: the
	// call ids it emitted and every call id of its input.
	seen, all map[string]struct{}
	// starts counts the times the prefix started over (Starts).
	starts uint64
}

type rowKey struct {
	id       int64
	archived bool
	kind     store.RowKind
}

func keyOf(r *store.Message) rowKey { return rowKey{r.ID, r.Archived, r.Kind} }

// Reset forgets the prefix.
func (p *Projector) Reset() { *p = Projector{starts: p.starts + 1} }

// Starts counts the times the prefix started over (Reset, or rows that no
// longer match it). Whoever keeps anything derived from the stable
// messages across calls (a wire cache) drops it when this changes: the
// new prefix may hold other values at the same positions.
func (p *Projector) Starts() uint64 { return p.starts }

// Project returns the messages Project(rows) returns, with the first
// stable of them already cleaned (CleanText) and the same values as in
// every earlier result since the prefix last started over; the caller
// cleans the rest. rep counts the repairs made in the part after the
// prefix.
func (p *Projector) Project(rows []store.Message) (msgs []llm.Message, stable int, rep Report) {
	if !p.valid(rows) {
		p.Reset()
	}
	k := len(p.keys)
	in, from := projectRows(rows[k:])
	if j := p.cut(in); j > 0 && p.promote(rows[k:k+from[j]+1], in[:j]) {
		in = in[j:]
	}
	r := p.repairer()
	out, rep := r.repair(in)
	msgs = make([]llm.Message, len(p.msgs), len(p.msgs)+len(out))
	copy(msgs, p.msgs)
	return append(msgs, out...), len(p.msgs), rep
}

// valid reports whether rows still start with the prefix's rows.
func (p *Projector) valid(rows []store.Message) bool {
	if len(p.keys) == 0 {
		return true
	}
	if len(rows) <= len(p.keys) || keyOf(&rows[len(p.keys)]) != p.next {
		return false
	}
	for i, k := range p.keys {
		if keyOf(&rows[i]) != k {
			return false
		}
	}
	return true
}

// cut returns the index in in of the newest assistant message that can
// start the part after the prefix (0: none): it follows a user message or
// a tool result, a user message comes before it, and every row before it
// has an ID to check it by later.
func (p *Projector) cut(in []llm.Message) int {
	for j := len(in) - 1; j > 0; j-- {
		if in[j].Role != llm.RoleAssistant || (in[j-1].Role != llm.RoleUser && in[j-1].Role != llm.RoleTool) {
			continue
		}
		if len(p.msgs) > 0 {
			return j
		}
		for i := range j {
			if in[i].Role == llm.RoleUser {
				return j
			}
		}
		return 0
	}
	return 0
}

// promote makes in (projected from rows but their last, the row of the
// message after in) part of the prefix when its repair ends on a user
// message or a tool result and renamed no id.
func (p *Projector) promote(rows []store.Message, in []llm.Message) bool {
	for i := range rows {
		if rows[i].ID == 0 {
			return false // not stored: nothing to recognise it by later
		}
	}
	r := p.repairer()
	out, rep := r.repair(in)
	if len(out) == 0 || rep.DuplicateIDs+rep.EmptyIDs > 0 {
		return false
	}
	if last := out[len(out)-1].Role; last != llm.RoleUser && last != llm.RoleTool {
		return false
	}
	if p.seen == nil {
		p.seen, p.all = map[string]struct{}{}, map[string]struct{}{}
	}
	for id := range r.ids.seen {
		p.seen[id] = struct{}{}
	}
	for i := range in {
		for _, c := range in[i].ToolCalls {
			p.all[c.ID] = struct{}{}
		}
	}
	for i := range out {
		out[i], _ = cleanMessage(out[i])
	}
	// The first prefix of a long session is most of it: out becomes the
	// prefix as it is, and the keys are sized once, so no copy is grown
	// message by message.
	if len(p.msgs) == 0 {
		p.msgs = out
	} else {
		p.msgs = append(p.msgs, out...)
	}
	last := len(rows) - 1
	p.keys = slices.Grow(p.keys, last)
	for i := range rows[:last] {
		p.keys = append(p.keys, keyOf(&rows[i]))
	}
	p.next = keyOf(&rows[last])
	return true
}

// repairer starts where the prefix ended.
func (p *Projector) repairer() *repairer {
	return &repairer{afterPrefix: len(p.msgs) > 0, ids: idAllocator{priorSeen: p.seen, priorAll: p.all}}
}

// projectRows is Project's first step: the messages of rows sent to the
// model, and for each the index of the row it came from (with len(rows)
// appended).
func projectRows(rows []store.Message) ([]llm.Message, []int) {
	msgs := make([]llm.Message, 0, len(rows))
	from := make([]int, 0, len(rows)+1)
	for i := range rows {
		if m, ok := projectRow(&rows[i]); ok {
			msgs = append(msgs, m)
			from = append(from, i)
		}
	}
	return msgs, append(from, len(rows))
}

// projectRow is one row's message on the wire, false when it is not sent.
func projectRow(row *store.Message) (llm.Message, bool) {
	if row.Archived || row.Kind.DisplayOnly() {
		return llm.Message{}, false
	}
	m := row.Message
	switch {
	case row.APIContent != "":
		m.Content = withText(row.APIContent, m.Content)
	case row.Kind == store.RowInterrupted && m.Role == llm.RoleAssistant &&
		len(m.ToolCalls) == 0 && blank(m.Content):
		m.Content = []llm.Part{llm.TextPart(InterruptedPlaceholder)}
	}
	return m, true
}
