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
//
// Sink receives every fact of the turn as a typed Update (update.go). The
// other fields are an older, narrower view of the same emissions, kept so
// existing callers work: each is fed from the update Sink receives.
type Hooks struct {
	// Sink receives the turn's updates.
	Sink Sink
	// TextDelta streams the answer as it arrives.
	//
	// Deprecated: use Sink (TextDelta). The same holds for every callback
	// below: Sink carries each of their facts, typed.
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

// Emit reports u to the sink and to the callback that shows the same
// fact. Packages that run parts of a turn (the agent's subagents) emit
// through it too.
func (h *Hooks) Emit(u Update) {
	notify(h.Sink, u)
	switch u := u.(type) {
	case TextDelta:
		notify(h.TextDelta, u.Text)
	case ReasoningDelta:
		notify(h.ReasoningDelta, u.Text)
	case Discard:
		if h.Discard != nil {
			h.Discard()
		}
	case ToolStarted:
		notify(h.ToolStart, u.Call())
	case ToolFinished:
		if h.ToolEnd != nil {
			h.ToolEnd(u.Call(), tool.Result{Content: u.Result, IsError: u.IsError}, u.Took)
		}
	case SubagentStart:
		notify(h.SubagentStarted, u.Subagent)
	case SubagentEnd:
		notify(h.SubagentFinished, u.Subagent)
	case Steered:
		notify(h.Steered, SteerMessage{ID: u.ID, Text: u.Text})
	case TodoChanged:
		notify(h.Todo, u.Items)
	case Pressure:
		if h.ContextPressure != nil {
			h.ContextPressure(u)
		} else if h.Status != nil {
			h.Status(u.Line())
		}
	case Status:
		if h.Status != nil {
			if line := u.Line(); line != "" {
				h.Status(line)
			}
		}
	}
}

// notify calls the optional callback f with v.
func notify[T any, F ~func(T)](f F, v T) {
	if f != nil {
		f(v)
	}
}

// listening says whether anything receives updates: the engine builds
// none when nothing does.
func (h *Hooks) listening() bool {
	return h.Sink != nil || h.TextDelta != nil || h.ReasoningDelta != nil || h.Discard != nil ||
		h.ToolStart != nil || h.ToolEnd != nil || h.Status != nil || h.SubagentStarted != nil ||
		h.SubagentFinished != nil || h.Steered != nil || h.ContextPressure != nil || h.Todo != nil
}

// emit is Emit when something listens. Rare facts only: the streaming
// ones have their own helpers, which cost nothing without a Sink.
func (h *Hooks) emit(u Update) {
	if h.listening() {
		h.Emit(u)
	}
}

// Deltas stream per token: without a Sink they go straight to the
// callbacks, with no update built.
func (h *Hooks) textDelta(s string) {
	if h.Sink != nil {
		h.Sink(TextDelta{Text: s})
	}
	if h.TextDelta != nil {
		h.TextDelta(s)
	}
}

func (h *Hooks) reasoningDelta(s string) {
	if h.Sink != nil {
		h.Sink(ReasoningDelta{Text: s})
	}
	if h.ReasoningDelta != nil {
		h.ReasoningDelta(s)
	}
}

func (h *Hooks) toolStart(c llm.ToolCall) {
	if h.Sink != nil {
		h.Sink(ToolStarted{CallID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	if h.ToolStart != nil {
		h.ToolStart(c)
	}
}

func (h *Hooks) toolEnd(c llm.ToolCall, r tool.Result, d time.Duration) {
	if h.Sink != nil {
		h.Sink(toolFinished(c, r, d))
	}
	if h.ToolEnd != nil {
		h.ToolEnd(c, r, d)
	}
}

type callKey struct{}

// CallFrom returns the tool call a tool's Run serves, from the context the
// engine passes it.
func CallFrom(ctx context.Context) (llm.ToolCall, bool) {
	c, ok := ctx.Value(callKey{}).(llm.ToolCall)
	return c, ok
}
