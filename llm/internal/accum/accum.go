// Package accum is the accumulation every stream adapter does: answer text
// (with inline <think> tags split out), reasoning, tool calls assembled from
// argument fragments, and the events each piece yields. The adapters decode
// their wire events and map usage and finish reasons; the rest is here once.
package accum

import (
	"slices"
	"strings"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/thinktags"
)

// Stream accumulates one streamed answer. The zero value is ready. Events
// are collected between Begin and Events; the slice Events returns is valid
// until the next Begin.
type Stream struct {
	ID, Model string
	Usage     llm.Usage

	text      strings.Builder
	reasoning strings.Builder
	think     thinktags.Splitter
	calls     []*Call // in order of first appearance
	out       []llm.Event
}

// Call is one tool call being assembled.
type Call struct {
	Index    int // as yielded in its events
	ID, Name string
	Args     strings.Builder
	// Started says EventToolCallStart was yielded; fragments that came
	// before it are yielded with it.
	Started bool
}

// Identify records the answer's id and model from a wire event that names
// them; an empty one keeps what an earlier event said.
func (s *Stream) Identify(id, model string) {
	if id != "" {
		s.ID = id
	}
	if model != "" {
		s.Model = model
	}
}

// SetUsage records usage reported as totals, as Gemini and the Responses
// API send it: the prompt's count includes its cached tokens and the
// output's its reasoning tokens. llm.Usage keeps the cached ones apart.
func (s *Stream) SetUsage(prompt, cached, output, reasoning int64) {
	s.Usage = llm.Usage{
		InputTokens:     max(prompt-cached, 0),
		CacheReadTokens: cached,
		OutputTokens:    output,
		ReasoningTokens: reasoning,
		Reported:        true,
	}
}

// Begin starts the events of the next wire event.
func (s *Stream) Begin() { s.out = s.out[:0] }

// Events is what the calls since Begin yielded.
func (s *Stream) Events() []llm.Event { return s.out }

// Text adds answer text; inline reasoning tags in it become reasoning.
func (s *Stream) Text(frag string) {
	if frag != "" {
		s.emit(s.think.Feed(frag))
	}
}

// Visible adds text the user reads as it is, tags and all (a refusal).
func (s *Stream) Visible(frag string) {
	if frag != "" {
		s.emit(frag, "")
	}
}

// Flush ends the answer text: what the tag splitter held back is yielded.
func (s *Stream) Flush() { s.emit(s.think.Flush()) }

func (s *Stream) emit(text, reasoning string) {
	s.Reasoning(reasoning)
	if text != "" {
		s.text.WriteString(text)
		s.out = append(s.out, llm.Event{Type: llm.EventTextDelta, Text: text})
	}
}

// Reasoning adds reasoning text, which the answer's Reasoning.Text keeps.
func (s *Stream) Reasoning(frag string) {
	if frag != "" {
		s.reasoning.WriteString(frag)
		s.out = append(s.out, llm.Event{Type: llm.EventReasoningDelta, Text: frag})
	}
}

// ReasoningEvent yields reasoning the adapter keeps itself (Anthropic's
// signed blocks, which are never merged).
func (s *Stream) ReasoningEvent(frag string) {
	if frag != "" {
		s.out = append(s.out, llm.Event{Type: llm.EventReasoningDelta, Text: frag})
	}
}

// Note adds to the kept reasoning without yielding it (a separator).
func (s *Stream) Note(text string) { s.reasoning.WriteString(text) }

// HasReasoning reports whether any reasoning text was kept.
func (s *Stream) HasReasoning() bool { return s.reasoning.Len() > 0 }

// PartialText is the answer text yielded so far.
func (s *Stream) PartialText() string { return s.text.String() }

// Calls are the tool calls in order of first appearance.
func (s *Stream) Calls() []*Call { return s.calls }

// Call returns the call yielded as index, adding an unstarted one when
// there is none.
func (s *Stream) Call(index int) *Call {
	for _, c := range s.calls {
		if c.Index == index {
			return c
		}
	}
	c := &Call{Index: index}
	s.calls = append(s.calls, c)
	return c
}

// NewCall adds a call, numbered after the others, and starts it.
func (s *Stream) NewCall(id, name string) *Call {
	c := &Call{Index: len(s.calls), ID: id, Name: name}
	s.calls = append(s.calls, c)
	s.Start(c)
	return c
}

// Start yields c's EventToolCallStart and the fragments it has so far.
func (s *Stream) Start(c *Call) {
	c.Started = true
	s.out = append(s.out, llm.Event{Type: llm.EventToolCallStart, Index: c.Index, ID: c.ID, Name: c.Name})
	if c.Args.Len() > 0 {
		s.out = append(s.out, llm.Event{Type: llm.EventToolCallDelta, Index: c.Index, Text: c.Args.String()})
	}
}

// Args adds a fragment of c's arguments, yielded once c has started.
func (s *Stream) Args(c *Call, frag string) {
	c.Args.WriteString(frag)
	if c.Started && frag != "" {
		s.out = append(s.out, llm.Event{Type: llm.EventToolCallDelta, Index: c.Index, Text: frag})
	}
}

// Sorted returns the calls ordered by Index (stable).
func (s *Stream) Sorted() []*Call {
	calls := slices.Clone(s.calls)
	slices.SortStableFunc(calls, func(x, y *Call) int { return x.Index - y.Index })
	return calls
}

// Message assembles the answer: text (what streamed before an orphan close
// tag moves to reasoning: a template opened the block in the prompt, so it
// was shown as text but is not stored as the answer) and the calls in
// Index order, whose empty arguments become emptyArgs. reasoning is the
// kept reasoning text; the adapter builds Message.Reasoning from it.
func (s *Stream) Message(emptyArgs string) (msg llm.Message, reasoning string) {
	msg.Role = llm.RoleAssistant
	text := s.text.String()
	if answer, r, ok := thinktags.SplitOrphanClose(text); ok {
		text = answer
		s.reasoning.WriteString(r)
	}
	if text != "" {
		msg.Content = []llm.Part{llm.TextPart(text)}
	}
	for _, c := range s.Sorted() {
		args := c.Args.String()
		if args == "" {
			args = emptyArgs
		}
		msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: args})
	}
	return msg, s.reasoning.String()
}

// Response is the final answer with msg and the stream's id, model and
// usage.
func (s *Stream) Response(msg llm.Message, finish llm.FinishReason, raw string) *llm.Response {
	return &llm.Response{Message: msg, FinishReason: finish, RawFinishReason: raw, Usage: s.Usage, Model: s.Model, ID: s.ID}
}
