package transcript

import (
	"slices"

	"github.com/talaria-agent/talaria/llm"
)

// Repair returns a sequence every provider accepts. The input slice and the
// messages in it are never written to: the result is a new slice whose
// unchanged messages share their content with the input, and only the
// messages Repair changes get fresh content.
//
// The rules, in the order they apply:
//   - messages whose role is not user, assistant or tool are dropped (the
//     system prompt travels in llm.Request.System);
//   - assistant and tool messages before the first user message are dropped;
//   - consecutive assistant messages that each carry tool calls, with no
//     result or user message between them, are one turn split over several
//     messages (parallel calls as other tools store them): they merge into
//     one (calls concatenated in order, text joined, the first reasoning
//     kept), so the results that follow pair with all of the calls;
//   - a tool result is kept only when it answers a still-unanswered call of
//     the nearest preceding assistant message; otherwise it is an orphan and
//     is dropped;
//   - each assistant message with tool calls is followed directly by its
//     results: the recorded ones in call order (a result recorded after a
//     later user message is pulled back into its group), then synthetic ones
//     (MissingToolResult, IsError) for calls that have none, in call order;
//   - a tool-call id already used earlier in the sequence becomes id_2,
//     id_3 … and an empty id becomes call_N; the results follow the rename;
//   - consecutive user messages merge (text joined with a blank line);
//   - an assistant message directly after an assistant message without tool
//     calls merges into it (text joined, the later calls and reasoning kept);
//   - an assistant message with neither text nor tool calls gets
//     InterruptedPlaceholder, a user message without text EmptyUserText.
//
// Repair is idempotent: repairing its output changes nothing.
func Repair(msgs []llm.Message) ([]llm.Message, Report) {
	var r repairer
	return r.repair(msgs)
}

// repair runs the rules on msgs from r's initial state (afterPrefix, ids).
func (r *repairer) repair(msgs []llm.Message) ([]llm.Message, Report) {
	r.collect(msgs)
	out := r.emit(msgs)
	r.fixEmpty(out)
	return out, r.rep
}

// item is a user or assistant message that survives the first pass; tool
// results hang off the assistant item they answer.
type item struct {
	idx    int   // index into the input
	merged []int // later assistant messages with calls merged into this one
	slot0  int   // first index into repairer.slots (assistant with tool calls)
	moved  bool  // a result came after a user message following the assistant
}

// calls returns the item's tool calls: its own, then those of the
// assistant messages merged into it.
func (it *item) calls(msgs []llm.Message) []llm.ToolCall {
	calls := msgs[it.idx].ToolCalls
	if len(it.merged) == 0 {
		return calls
	}
	calls = slices.Clone(calls)
	for _, j := range it.merged {
		calls = append(calls, msgs[j].ToolCalls...)
	}
	return calls
}

type repairer struct {
	// afterPrefix says msgs continue a prefix repaired earlier that holds
	// a user message (see Projector).
	afterPrefix bool
	rep         Report
	items       []item
	slots       []int // per tool call, in call order: input index of its result, -1 if none
	ids         idAllocator
}

// collect decides which message goes where without copying any of them.
func (r *repairer) collect(msgs []llm.Message) {
	r.items = make([]item, 0, len(msgs))
	cur := -1          // item index of the nearest preceding assistant
	afterUser := false // a user message came after that assistant
	seenUser := r.afterPrefix
	openCalls := false // the last message kept is an assistant with calls, none answered yet
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case llm.RoleUser:
			seenUser = true
			afterUser = true
			openCalls = false
			r.items = append(r.items, item{idx: i})
		case llm.RoleAssistant:
			if !seenUser {
				r.rep.DroppedLeading++
				continue
			}
			if openCalls && len(m.ToolCalls) > 0 {
				// The same turn split over two messages: its calls join
				// the group (its slots follow the group's directly).
				it := &r.items[cur]
				it.merged = append(it.merged, i)
				for range m.ToolCalls {
					r.slots = append(r.slots, -1)
				}
				r.rep.MergedCallGroups++
				continue
			}
			r.items = append(r.items, item{idx: i, slot0: len(r.slots)})
			for range m.ToolCalls {
				r.slots = append(r.slots, -1)
			}
			cur = len(r.items) - 1
			afterUser = false
			openCalls = len(m.ToolCalls) > 0
		case llm.RoleTool:
			openCalls = false
			if !seenUser {
				r.rep.DroppedLeading++
				continue
			}
			if cur < 0 || !r.assign(msgs, cur, i, afterUser) {
				r.rep.OrphanResults++
			}
		default:
			r.rep.InvalidRoles++
		}
	}
}

// assign pairs the result at input index i with the first unanswered call
// of item cur that has its id.
func (r *repairer) assign(msgs []llm.Message, cur, i int, afterUser bool) bool {
	it := &r.items[cur]
	id := msgs[i].ToolCallID
	for j, c := range it.calls(msgs) {
		s := &r.slots[it.slot0+j]
		if c.ID == id && *s < 0 {
			*s = i
			if afterUser {
				it.moved = true
			}
			return true
		}
	}
	return false
}

// emit builds the output: merges, renames and call groups.
func (r *repairer) emit(msgs []llm.Message) []llm.Message {
	out := make([]llm.Message, 0, len(r.items)+len(r.slots))
	for _, it := range r.items {
		m := msgs[it.idx] // a copy: fields may be reassigned, never written through
		last := len(out) - 1
		if m.Role == llm.RoleUser {
			if last >= 0 && out[last].Role == llm.RoleUser {
				out[last].Content = joinParts(out[last].Content, m.Content)
				r.rep.MergedUsers++
				continue
			}
			out = append(out, m)
			continue
		}
		if len(it.merged) > 0 {
			m = mergeSplit(msgs, &it)
		}
		orig := m.ToolCalls
		var dup, empty int
		m.ToolCalls, dup, empty = r.ids.unique(msgs, orig)
		r.rep.DuplicateIDs += dup
		r.rep.EmptyIDs += empty
		if last >= 0 && out[last].Role == llm.RoleAssistant && len(out[last].ToolCalls) == 0 {
			prev := &out[last]
			prev.Content = joinParts(prev.Content, m.Content)
			prev.ToolCalls = m.ToolCalls
			// Newer reasoning wins; an older compaction checkpoint is kept.
			prev.Reasoning = llm.MergeReasoning(prev.Reasoning, m.Reasoning)
			r.rep.MergedAssistants++
		} else {
			out = append(out, m)
		}
		if len(orig) > 0 {
			out = r.emitResults(out, msgs, it, m.ToolCalls)
		}
	}
	return out
}

// mergeSplit builds the one assistant message of a turn stored split over
// several: text joined, calls concatenated, the first reasoning kept (a
// signature covers one block, so blocks cannot be joined).
func mergeSplit(msgs []llm.Message, it *item) llm.Message {
	m := msgs[it.idx]
	m.ToolCalls = it.calls(msgs)
	for _, j := range it.merged {
		o := &msgs[j]
		if len(o.Content) > 0 {
			m.Content = joinParts(m.Content, o.Content)
		}
		if m.Reasoning.Empty() && !o.Reasoning.Empty() {
			m.Reasoning = o.Reasoning
		}
	}
	return m
}

// emitResults appends the results of one call group: the recorded results
// in call order, then the synthetic ones (recorded or new) in call order.
// Keeping every synthetic result after the real ones is what makes Repair
// idempotent once it has added some.
func (r *repairer) emitResults(out []llm.Message, msgs []llm.Message, it item, calls []llm.ToolCall) []llm.Message {
	slots := r.slots[it.slot0 : it.slot0+len(calls)]
	moved := it.moved
	prev := -1
	keep := func(j, si int) {
		if si < prev {
			moved = true
		}
		prev = si
		res := msgs[si]
		res.ToolCallID = calls[j].ID
		out = append(out, res)
	}
	for j, si := range slots {
		if si >= 0 && !isSynthetic(&msgs[si]) {
			keep(j, si)
		}
	}
	for j, si := range slots {
		switch {
		case si < 0:
			out = append(out, llm.NewToolResult(calls[j], MissingToolResult, true))
			r.rep.MissingResults++
		case isSynthetic(&msgs[si]):
			keep(j, si)
		}
	}
	if moved {
		r.rep.Reordered++
	}
	return out
}

// fixEmpty gives empty messages neutral text. out is Repair's own slice, so
// assigning fresh Content is safe.
func (r *repairer) fixEmpty(out []llm.Message) {
	for i := range out {
		m := &out[i]
		switch {
		case m.Role == llm.RoleAssistant && len(m.ToolCalls) == 0 && blank(m.Content):
			m.Content = []llm.Part{llm.TextPart(InterruptedPlaceholder)}
			r.rep.EmptyAssistants++
		case m.Role == llm.RoleUser && blank(m.Content):
			m.Content = []llm.Part{llm.TextPart(EmptyUserText)}
			r.rep.EmptyUsers++
		}
	}
}

// isSynthetic recognizes a result Repair wrote itself.
func isSynthetic(m *llm.Message) bool {
	return m.IsError && m.Text() == MissingToolResult
}
