package turn

import (
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/tool"
)

// Hooks lets a caller watch a turn as it runs. Every field may be nil. Hooks
// run on the turn's goroutine (tool hooks on the tool's goroutine for
// parallel read-only calls) and must return quickly.
type Hooks struct {
	// TextDelta streams the answer as it arrives.
	TextDelta func(text string)
	// ReasoningDelta streams the model's thinking, when it shows any.
	ReasoningDelta func(text string)
	// Discard says the text streamed since the last API call started is
	// void (the stream died and will be retried): a UI should drop it.
	Discard func()
	// ToolStart and ToolEnd bracket each tool call.
	ToolStart func(call llm.ToolCall)
	ToolEnd   func(call llm.ToolCall, res tool.Result, took time.Duration)
	// Status carries one-line progress: retries, fallbacks, compression.
	Status func(line string)
}

func (h *Hooks) textDelta(s string) {
	if h.TextDelta != nil {
		h.TextDelta(s)
	}
}

func (h *Hooks) reasoningDelta(s string) {
	if h.ReasoningDelta != nil {
		h.ReasoningDelta(s)
	}
}

func (h *Hooks) discard() {
	if h.Discard != nil {
		h.Discard()
	}
}

func (h *Hooks) toolStart(c llm.ToolCall) {
	if h.ToolStart != nil {
		h.ToolStart(c)
	}
}

func (h *Hooks) toolEnd(c llm.ToolCall, r tool.Result, d time.Duration) {
	if h.ToolEnd != nil {
		h.ToolEnd(c, r, d)
	}
}

func (h *Hooks) status(line string) {
	if h.Status != nil {
		h.Status(line)
	}
}
