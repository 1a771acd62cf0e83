package openai

import (
	"strconv"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/accum"
)

// assembler turns chunks into events and, at the end, into one Response.
// Tool calls are assembled by their wire index: the first delta of a call
// usually carries id and name, later ones only argument fragments.
type assembler struct {
	s         accum.Stream
	refused   bool
	finishRaw string
	finished  bool // a finish_reason arrived: the answer is complete
}

// add folds one chunk in and returns the events it produced. The returned
// slice is only valid until the next call.
func (a *assembler) add(c *wireChunk) []llm.Event {
	a.s.Begin()
	if a.s.ID == "" {
		a.s.ID = c.ID
	}
	if a.s.Model == "" {
		a.s.Model = c.Model
	}
	if c.Usage != nil {
		// Some servers repeat running totals on every chunk: the last wins.
		a.s.Usage = mapUsage(c.Usage)
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // n > 1 is never requested; ignore stray choices
		}
		d := &ch.Delta
		if ch.Message != nil {
			d = ch.Message
		}
		a.addDelta(d, ch.Message != nil)
		// A finish_reason may share a chunk with content, so it is read
		// after the delta.
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			a.finishRaw = *ch.FinishReason
			a.finished = true
		}
	}
	return a.s.Events()
}

// addDelta folds one delta in. whole is set for a non-streamed message,
// whose tool calls are complete and may lack an index.
func (a *assembler) addDelta(d *wireDelta, whole bool) {
	r := d.ReasoningContent
	if r == "" {
		r = d.Reasoning // servers that send both send the same text
	}
	a.s.Reasoning(r)
	a.s.Text(d.Content)
	if d.Refusal != "" {
		// A refusal is shown like text: it is what the user gets to read.
		a.refused = true
		a.s.Visible(d.Refusal)
	}
	for i := range d.ToolCalls {
		tc := &d.ToolCalls[i]
		if whole && tc.Index == nil {
			idx := i
			tc.Index = &idx
		}
		a.addToolCall(tc)
	}
}

func (a *assembler) addToolCall(tc *wireToolCallDelta) {
	st := a.s.Call(a.resolveIndex(tc))
	if tc.ID != "" && st.ID == "" && !st.Started {
		st.ID = tc.ID
	}
	if tc.Function.Name != "" && st.Name == "" {
		st.Name = tc.Function.Name
	}
	a.s.Args(st, tc.Function.Arguments)
	if !st.Started && st.Name != "" {
		a.start(st) // carries the fragments buffered so far
	}
}

// resolveIndex finds the call a delta belongs to. Servers that omit the
// index (some Gemini and Ollama versions) are matched by id, and otherwise a
// named delta after a named call starts a new call.
func (a *assembler) resolveIndex(tc *wireToolCallDelta) int {
	if tc.Index != nil {
		return *tc.Index
	}
	calls := a.s.Calls()
	if tc.ID != "" {
		for _, st := range calls {
			if st.ID == tc.ID {
				return st.Index
			}
		}
		return nextIndex(calls)
	}
	if len(calls) == 0 {
		return 0
	}
	last := calls[len(calls)-1]
	if tc.Function.Name != "" && last.Name != "" && tc.Function.Name != last.Name {
		return nextIndex(calls)
	}
	return last.Index
}

func nextIndex(calls []*accum.Call) int {
	next := 0
	for _, st := range calls {
		next = max(next, st.Index+1)
	}
	return next
}

// start yields the call's start, settling its id first: a missing or
// duplicate id (tool results are paired by id) becomes "call_<index>".
func (a *assembler) start(st *accum.Call) {
	if st.ID == "" || a.idTaken(st) {
		st.ID = "call_" + strconv.Itoa(st.Index)
	}
	a.s.Start(st)
}

func (a *assembler) idTaken(st *accum.Call) bool {
	for _, o := range a.s.Calls() {
		if o != st && o.Started && o.ID == st.ID {
			return true
		}
	}
	return false
}

// finish returns the closing events: a start for any call whose name never
// arrived (so events and Response agree), then EventDone.
func (a *assembler) finish() []llm.Event {
	a.s.Begin()
	a.s.Flush()
	for _, st := range a.s.Sorted() {
		if !st.Started {
			a.start(st)
		}
	}
	msg, reasoning := a.s.Message("")
	if reasoning != "" {
		msg.Reasoning = &llm.Reasoning{Text: reasoning}
	}
	fr := mapFinish(a.finishRaw)
	if a.refused && (fr == llm.FinishStop || fr == llm.FinishUnknown) {
		fr = llm.FinishRefusal
	}
	resp := a.s.Response(msg, fr, a.finishRaw)
	return append(a.s.Events(), llm.Event{Type: llm.EventDone, Response: resp})
}

// partialText is the answer text yielded so far.
func (a *assembler) partialText() string { return a.s.PartialText() }
