package openai

import (
	"slices"
	"strconv"
	"strings"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/thinktags"
)

// assembler turns chunks into events and, at the end, into one Response.
// Tool calls are assembled by their wire index: the first delta of a call
// usually carries id and name, later ones only argument fragments.
type assembler struct {
	id, model string
	text      strings.Builder
	reasoning strings.Builder
	// think moves inline <think>…</think> out of the content into reasoning.
	think     thinktags.Splitter
	refused   bool
	calls     []*callState // in order of first appearance
	finishRaw string
	finished  bool // a finish_reason arrived: the answer is complete
	usage     llm.Usage
	out       []llm.Event // reused buffer for add's result
}

type callState struct {
	index   int
	id      string
	name    string
	args    strings.Builder
	started bool // EventToolCallStart was emitted
}

// add folds one chunk in and returns the events it produced. The returned
// slice is only valid until the next call.
func (a *assembler) add(c *wireChunk) []llm.Event {
	a.out = a.out[:0]
	if a.id == "" {
		a.id = c.ID
	}
	if a.model == "" {
		a.model = c.Model
	}
	if c.Usage != nil {
		// Some servers repeat running totals on every chunk: the last wins.
		a.usage = mapUsage(c.Usage)
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
	return a.out
}

// addDelta folds one delta in. whole is set for a non-streamed message,
// whose tool calls are complete and may lack an index.
func (a *assembler) addDelta(d *wireDelta, whole bool) {
	r := d.ReasoningContent
	if r == "" {
		r = d.Reasoning // servers that send both send the same text
	}
	if r != "" {
		a.reasoning.WriteString(r)
		a.out = append(a.out, llm.Event{Type: llm.EventReasoningDelta, Text: r})
	}
	if d.Content != "" {
		a.addContent(a.think.Feed(d.Content))
	}
	if d.Refusal != "" {
		// A refusal is shown like text: it is what the user gets to read.
		a.refused = true
		a.text.WriteString(d.Refusal)
		a.out = append(a.out, llm.Event{Type: llm.EventTextDelta, Text: d.Refusal})
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

// addContent emits answer text and the reasoning split out of it.
func (a *assembler) addContent(text, reasoning string) {
	if reasoning != "" {
		a.reasoning.WriteString(reasoning)
		a.out = append(a.out, llm.Event{Type: llm.EventReasoningDelta, Text: reasoning})
	}
	if text != "" {
		a.text.WriteString(text)
		a.out = append(a.out, llm.Event{Type: llm.EventTextDelta, Text: text})
	}
}

func (a *assembler) addToolCall(tc *wireToolCallDelta) {
	st := a.call(a.resolveIndex(tc))
	if tc.ID != "" && st.id == "" && !st.started {
		st.id = tc.ID
	}
	if tc.Function.Name != "" && st.name == "" {
		st.name = tc.Function.Name
	}
	frag := tc.Function.Arguments
	st.args.WriteString(frag)
	if !st.started {
		if st.name != "" {
			a.start(st) // carries the fragments buffered so far
		}
		return
	}
	if frag != "" {
		a.out = append(a.out, llm.Event{Type: llm.EventToolCallDelta, Index: st.index, Text: frag})
	}
}

// resolveIndex finds the call a delta belongs to. Servers that omit the
// index (some Gemini and Ollama versions) are matched by id, and otherwise a
// named delta after a named call starts a new call.
func (a *assembler) resolveIndex(tc *wireToolCallDelta) int {
	if tc.Index != nil {
		return *tc.Index
	}
	if tc.ID != "" {
		for _, st := range a.calls {
			if st.id == tc.ID {
				return st.index
			}
		}
		return a.nextIndex()
	}
	if len(a.calls) == 0 {
		return 0
	}
	last := a.calls[len(a.calls)-1]
	if tc.Function.Name != "" && last.name != "" && tc.Function.Name != last.name {
		return a.nextIndex()
	}
	return last.index
}

func (a *assembler) nextIndex() int {
	next := 0
	for _, st := range a.calls {
		next = max(next, st.index+1)
	}
	return next
}

func (a *assembler) call(index int) *callState {
	for _, st := range a.calls {
		if st.index == index {
			return st
		}
	}
	st := &callState{index: index}
	a.calls = append(a.calls, st)
	return st
}

// start emits EventToolCallStart, settling the call's id: a missing or
// duplicate id (tool results are paired by id) becomes "call_<index>".
func (a *assembler) start(st *callState) {
	if st.id == "" || a.idTaken(st) {
		st.id = "call_" + strconv.Itoa(st.index)
	}
	st.started = true
	a.out = append(a.out, llm.Event{Type: llm.EventToolCallStart, Index: st.index, ID: st.id, Name: st.name})
	if st.args.Len() > 0 {
		a.out = append(a.out, llm.Event{Type: llm.EventToolCallDelta, Index: st.index, Text: st.args.String()})
	}
}

func (a *assembler) idTaken(st *callState) bool {
	for _, o := range a.calls {
		if o != st && o.started && o.id == st.id {
			return true
		}
	}
	return false
}

// finish returns the closing events: a start for any call whose name never
// arrived (so events and Response agree), then EventDone.
func (a *assembler) finish() []llm.Event {
	a.out = a.out[:0]
	a.addContent(a.think.Flush())
	calls := slices.Clone(a.calls)
	slices.SortStableFunc(calls, func(x, y *callState) int { return x.index - y.index })
	for _, st := range calls {
		if !st.started {
			a.start(st)
		}
	}
	msg := llm.Message{Role: llm.RoleAssistant}
	text := a.text.String()
	if answer, reasoning, ok := thinktags.SplitOrphanClose(text); ok {
		// The template opened the block in the prompt: what streamed
		// before the close tag was reasoning. It was shown as text; the
		// stored answer is clean.
		text = answer
		a.reasoning.WriteString(reasoning)
	}
	if text != "" {
		msg.Content = []llm.Part{llm.TextPart(text)}
	}
	for _, st := range calls {
		msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: st.id, Name: st.name, Arguments: st.args.String()})
	}
	if a.reasoning.Len() > 0 {
		msg.Reasoning = &llm.Reasoning{Text: a.reasoning.String()}
	}
	fr := mapFinish(a.finishRaw)
	if a.refused && (fr == llm.FinishStop || fr == llm.FinishUnknown) {
		fr = llm.FinishRefusal
	}
	resp := &llm.Response{
		Message:         msg,
		FinishReason:    fr,
		RawFinishReason: a.finishRaw,
		Usage:           a.usage,
		Model:           a.model,
		ID:              a.id,
	}
	a.out = append(a.out, llm.Event{Type: llm.EventDone, Response: resp})
	return a.out
}

// partialText is the answer text yielded so far.
func (a *assembler) partialText() string { return a.text.String() }
