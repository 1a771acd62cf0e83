package turn

import (
	"context"
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
	// SubagentStarted and SubagentFinished bracket each child session the
	// turn runs (a delegated task, see agent's delegate tool). The agent
	// calls them, from the delegate call's goroutine; several children
	// may run at once.
	SubagentStarted  func(ev SubagentEvent)
	SubagentFinished func(ev SubagentEvent)
	// Steered says a message of Input.Steer joined the turn: its row is
	// stored, and the model reads it on the next call.
	Steered func(m SteerMessage)
	// ContextPressure carries the context-pressure warning, typed; unset,
	// the warning is said as a Status line (Pressure.Line).
	ContextPressure func(p Pressure)
	// Todo carries the session's plan each time a todo call changed it
	// (and it was stored).
	Todo func(items []tool.TodoItem)
}

// SubagentEvent describes a child session of a turn. Finished events carry
// the child's exit, failure and usage.
type SubagentEvent struct {
	ParentSessionID string `json:"parent_session_id"`
	SessionID       string `json:"session_id"`
	Kind            string `json:"kind"` // store.SessionSubagent or store.SessionReview
	Task            string `json:"task,omitempty"`
	ToolCallID      string `json:"tool_call_id,omitempty"`
	// Set on finish.
	Exit     Exit      `json:"exit,omitempty"`
	Failure  *Failure  `json:"failure,omitempty"`
	Usage    llm.Usage `json:"usage"`
	CostUSD  float64   `json:"cost_usd"`
	APICalls int       `json:"api_calls"`
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

type callKey struct{}

// CallFrom returns the tool call a tool's Run serves, from the context the
// engine passes it.
func CallFrom(ctx context.Context) (llm.ToolCall, bool) {
	c, ok := ctx.Value(callKey{}).(llm.ToolCall)
	return c, ok
}
