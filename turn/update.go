package turn

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/tool"
)

// Update is one fact a running turn reports to whoever watches it: the
// CLI's progress lines, the gateway's event stream, the Go client. The set
// is closed (every Update is a type of this file) so a consumer's type
// switch can be complete; each fact is emitted once, through Hooks.Sink.
//
// Kind is the update's wire name: for the updates the gateway streams one
// to one it is the Server-Sent Event type. Status updates (retries,
// fallbacks, compression, guards, ...) are streamed as "status" events.
type Update interface {
	updateKind() string
}

// Sink receives a turn's updates. It runs on the turn's goroutine (tool
// updates on the tool's goroutine for parallel read-only calls) and must
// return quickly; an update is the sink's to keep.
type Sink func(Update)

// KindOf is an update's wire name ("text_delta", "call_failed", ...).
func KindOf(u Update) string { return u.updateKind() }

// StatusKind sorts status updates for front ends that show or filter them
// without reading their prose.
type StatusKind string

const (
	StatusRetry           StatusKind = "retry"
	StatusRotation        StatusKind = "rotation"
	StatusFallback        StatusKind = "fallback"
	StatusCompression     StatusKind = "compression"
	StatusGuard           StatusKind = "guard"
	StatusContinuation    StatusKind = "continuation"
	StatusContextPressure StatusKind = "context_pressure"
	StatusPromptRebuilt   StatusKind = "prompt_rebuilt"
	StatusHandoff         StatusKind = "handoff"
	StatusOther           StatusKind = "other"
)

// Status is an update that is progress a person may want to read: it says
// what sort it is, and Line renders it as one line of prose (at the edge:
// the engine never writes prose for consumers to parse).
type Status interface {
	Update
	StatusKind() StatusKind
	Line() string
}

// TextDelta is a piece of the answer as it streams.
type TextDelta struct {
	Text string `json:"text"`
}

// ReasoningDelta is a piece of the model's thinking, when it shows any.
type ReasoningDelta struct {
	Text string `json:"text"`
}

// Discard voids the text and thinking streamed since the current API call
// began: the stream died and the call is retried.
type Discard struct{}

// CallStarted: a model request is about to be sent.
type CallStarted struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Attempt  int    `json:"attempt"` // the call's number within the turn, from 1
	// EstimatedTokens is the request's estimated size.
	EstimatedTokens int `json:"estimated_tokens"`
}

// Decision is the recovery the engine chose for a failed call.
type Decision string

const (
	DecisionRetry    Decision = "retry"
	DecisionRotate   Decision = "rotate"
	DecisionClamp    Decision = "clamp"
	DecisionRepair   Decision = "repair"
	DecisionCompress Decision = "compress"
	DecisionFallback Decision = "fallback"
	DecisionStop     Decision = "stop"
)

// CallFailed: a model call failed and the engine decided what to do about
// it. Wait is the delay before a retry; Retry and MaxRetries count
// retries within the turn; MaxTokens is the new output cap of a clamp.
type CallFailed struct {
	Provider   string        `json:"provider"`
	Model      string        `json:"model"`
	Class      string        `json:"class"`
	HTTPStatus int           `json:"http_status,omitempty"`
	Retryable  bool          `json:"retryable,omitempty"`
	Decision   Decision      `json:"decision"`
	Wait       time.Duration `json:"wait_ns,omitempty"`
	Retry      int           `json:"retry,omitempty"`
	MaxRetries int           `json:"max_retries,omitempty"`
	MaxTokens  int           `json:"max_tokens,omitempty"`
	// Summary is the failure classifier's one-line description.
	Summary string `json:"summary"`
}

func (u CallFailed) StatusKind() StatusKind {
	switch u.Decision {
	case DecisionRotate:
		return StatusRotation
	case DecisionCompress:
		return StatusCompression
	case DecisionFallback:
		return StatusFallback
	}
	return StatusRetry
}

// Line is empty for the decisions another update says (a fallback, a
// compression) or that end the turn (stop): those have no line of their own.
func (u CallFailed) Line() string {
	switch u.Decision {
	case DecisionRetry:
		// "of N" is the turn's budget, not this class's cap (a refused
		// connection gets one): the counter reads the same across kinds.
		return fmt.Sprintf("retrying in %s: %s (retry %d of %d)", roundDelay(u.Wait), u.Summary, u.Retry, u.MaxRetries)
	case DecisionRotate:
		return fmt.Sprintf("switching to another %s key: %s", u.Provider, u.Summary)
	case DecisionClamp:
		return fmt.Sprintf("%s: lowering max_tokens to %d and retrying", u.Summary, u.MaxTokens)
	case DecisionRepair:
		return u.Summary + ": adjusting the request and retrying"
	}
	return ""
}

// Fallback: the turn moved to the next route of the chain.
type Fallback struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Class   string `json:"class"`
	Summary string `json:"summary"`
}

func (Fallback) StatusKind() StatusKind { return StatusFallback }
func (u Fallback) Line() string {
	return fmt.Sprintf("falling back from %s to %s: %s", u.From, u.To, u.Summary)
}

// CompressionStep says which moment of compression a Compression update is.
type CompressionStep string

const (
	// CompressThreshold: the request passed the threshold; compressing.
	CompressThreshold CompressionStep = "threshold"
	// CompressOverflow: the provider said the context is too long.
	CompressOverflow CompressionStep = "overflow"
	// CompressEmergency: normal passes cannot shrink it; emergency pass.
	CompressEmergency CompressionStep = "emergency"
	// CompressNoProgress: a pass gained nothing; no more this turn.
	CompressNoProgress CompressionStep = "no_progress"
	// CompressDone: the context was compressed (Before, After, ...).
	CompressDone CompressionStep = "compressed"
)

// Compression reports a step of context compression.
type Compression struct {
	Step CompressionStep `json:"step"`
	// Threshold: the estimate, the threshold and the model.
	Tokens    int    `json:"tokens,omitempty"`
	Threshold int    `json:"threshold,omitempty"`
	Model     string `json:"model,omitempty"`
	// Overflow, emergency: the classifier's summary of the rejection.
	Summary string `json:"summary,omitempty"`
	// Done: the estimated sizes, how many messages were summarized,
	// whether the summary failed (a placeholder stands in), and the
	// session the conversation continues in when compression rotated it.
	Before        int    `json:"before,omitempty"`
	After         int    `json:"after,omitempty"`
	Summarized    int    `json:"summarized,omitempty"`
	SummaryFailed bool   `json:"summary_failed,omitempty"`
	RotatedTo     string `json:"rotated_to,omitempty"`
}

func (Compression) StatusKind() StatusKind { return StatusCompression }
func (u Compression) Line() string {
	switch u.Step {
	case CompressThreshold:
		return fmt.Sprintf("context is ~%d tokens, over the %d-token threshold of %s: compressing", u.Tokens, u.Threshold, u.Model)
	case CompressOverflow:
		return u.Summary + ": compressing and retrying"
	case CompressEmergency:
		return u.Summary + ": normal compression cannot shrink it further; emergency pass keeping only your latest message and the newest tool call"
	case CompressNoProgress:
		return "compression made no progress; not trying again this turn"
	}
	msg := fmt.Sprintf("context compressed: ~%d → ~%d tokens", u.Before, u.After)
	if u.Summarized > 0 {
		msg += fmt.Sprintf(" (%d messages summarized)", u.Summarized)
	}
	if u.SummaryFailed {
		msg += " — the summary failed, a placeholder stands in for the removed messages"
	}
	if u.RotatedTo != "" {
		msg += "; the session continues as " + u.RotatedTo
	}
	return msg
}

// Guard names (Guard.Guard and the observer's EventGuard).
const (
	GuardIterationBudget = "iteration_budget"
	GuardSaidButStopped  = "said_but_stopped"
	GuardEmptyResponse   = "empty_response"
)

// Guard: a guard acted on the model's behaviour. Route and Attempts are
// set for empty answers (the route that gave them, how many so far).
type Guard struct {
	Guard    string `json:"guard"`
	Action   string `json:"action"`
	Route    string `json:"route,omitempty"`
	Attempts int    `json:"attempts,omitempty"`
}

func (Guard) StatusKind() StatusKind { return StatusGuard }
func (u Guard) Line() string {
	switch u.Guard {
	case GuardIterationBudget:
		return "iteration budget spent: asking the model to sum up without tools"
	case GuardSaidButStopped:
		return "the model announced an action but stopped; nudging it to continue"
	case GuardEmptyResponse:
		return fmt.Sprintf("%s returned an empty answer; retrying (%d so far)", u.Route, u.Attempts)
	}
	return fmt.Sprintf("guard %s: %s", u.Guard, u.Action)
}

// ContinuationReason says why the engine asked the model to go on.
type ContinuationReason string

const (
	ContinueMidSentence   ContinuationReason = "mid_sentence"   // a "stop" that ends mid-sentence
	ContinueOutputLimit   ContinuationReason = "output_limit"   // the answer hit the output cap
	ContinueSmallerPieces ContinuationReason = "smaller_pieces" // cut off before any of it arrived
	ContinueToolCallCut   ContinuationReason = "tool_call_cut"  // a tool call cut off by the cap
)

// Continuation: the answer (or a tool call) was cut and the engine asked
// for the rest. N of Of counts the attempts; Tool and RaisedTo (a new
// max_tokens, 0: unchanged) are set for a cut tool call.
type Continuation struct {
	Reason   ContinuationReason `json:"reason"`
	N        int                `json:"n,omitempty"`
	Of       int                `json:"of,omitempty"`
	Tool     string             `json:"tool,omitempty"`
	RaisedTo int                `json:"raised_to,omitempty"`
}

func (Continuation) StatusKind() StatusKind { return StatusContinuation }
func (u Continuation) Line() string {
	switch u.Reason {
	case ContinueMidSentence:
		return "the answer stopped mid-sentence; asking the model to continue it"
	case ContinueSmallerPieces:
		return fmt.Sprintf("the answer was cut off before any of it arrived; asking for it in smaller pieces (%d of %d)", u.N, u.Of)
	case ContinueToolCallCut:
		raised := ""
		if u.RaisedTo > 0 {
			raised = fmt.Sprintf("; raising max_tokens to %d", u.RaisedTo)
		}
		return fmt.Sprintf("the %s call was cut off by the output limit; asking for a smaller one (%d of %d)%s", u.Tool, u.N, u.Of, raised)
	}
	return fmt.Sprintf("the answer hit the output limit; continuing (%d of %d)", u.N, u.Of)
}

// Pressure (pressure.go) is the context-pressure status update.
func (Pressure) StatusKind() StatusKind { return StatusContextPressure }

// SessionContinued: the session asked for was continued in another (its
// compression child) and the turn runs there.
type SessionContinued struct {
	From string `json:"from"`
	To   string `json:"to"`
}

func (SessionContinued) StatusKind() StatusKind { return StatusOther }
func (u SessionContinued) Line() string {
	return fmt.Sprintf("session %s was continued as %s; using that", u.From, u.To)
}

// Handoff: the turn's node stopped (From, the lease holder that ran it)
// and this node continues the turn from its last durable point; Count is
// this turn's handoffs so far, Max the bound.
type Handoff struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Reason string `json:"reason"`
	Count  int    `json:"count"`
	Max    int    `json:"max"`
}

func (Handoff) StatusKind() StatusKind { return StatusHandoff }
func (u Handoff) Line() string {
	return fmt.Sprintf("the turn moved from node %s to %s (%s); continuing from its last saved step (handoff %d of at most %d)",
		u.From, u.To, u.Reason, u.Count, u.Max)
}

// SubagentStatus is a child session's status update, as its parent's turn
// reports it.
type SubagentStatus struct {
	SessionID string `json:"session_id"`
	Status    Status `json:"-"`
}

func (u SubagentStatus) StatusKind() StatusKind { return u.Status.StatusKind() }
func (u SubagentStatus) Line() string {
	line := u.Status.Line()
	if line == "" {
		return ""
	}
	return "subagent " + u.SessionID + ": " + line
}

// MarshalJSON nests the child's update under its own kind.
func (u SubagentStatus) MarshalJSON() ([]byte, error) {
	inner, err := json.Marshal(u.Status)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		SessionID string          `json:"session_id"`
		Update    string          `json:"update"`
		Detail    json.RawMessage `json:"detail"`
	}{u.SessionID, KindOf(u.Status), inner})
}

func (u *SubagentStatus) UnmarshalJSON(b []byte) error {
	var j struct {
		SessionID string          `json:"session_id"`
		Update    string          `json:"update"`
		Detail    json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	inner, err := DecodeUpdate(j.Update, j.Detail)
	if err != nil {
		return err
	}
	s, ok := inner.(Status)
	if !ok {
		return fmt.Errorf("subagent status: %q is not a status update", j.Update)
	}
	u.SessionID, u.Status = j.SessionID, s
	return nil
}

// StatusLine is a status whose cause a client cannot know: a server that
// sent only the line. The engine never emits it.
type StatusLine struct {
	Kind StatusKind `json:"kind"`
	Text string     `json:"line"`
}

func (u StatusLine) StatusKind() StatusKind { return u.Kind }
func (u StatusLine) Line() string           { return u.Text }

// ToolStarted: the model's tool call is about to be validated, approved
// and run (refused and invalid calls are shown too).
type ToolStarted struct {
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Call is the tool call.
func (u ToolStarted) Call() llm.ToolCall {
	return llm.ToolCall{ID: u.CallID, Name: u.Name, Arguments: u.Arguments}
}

// ToolFinished: a tool call ended with Result.
type ToolFinished struct {
	CallID     string        `json:"call_id"`
	Name       string        `json:"name"`
	Arguments  string        `json:"arguments,omitempty"`
	Result     string        `json:"result"`
	IsError    bool          `json:"is_error"`
	DurationMS int64         `json:"duration_ms"`
	Took       time.Duration `json:"-"`
}

// Call is the tool call.
func (u ToolFinished) Call() llm.ToolCall {
	return llm.ToolCall{ID: u.CallID, Name: u.Name, Arguments: u.Arguments}
}

func toolFinished(c llm.ToolCall, r tool.Result, took time.Duration) ToolFinished {
	return ToolFinished{CallID: c.ID, Name: c.Name, Arguments: c.Arguments, Result: r.Content, IsError: r.IsError,
		DurationMS: took.Milliseconds(), Took: took}
}

// ApprovalRequired: a tool call waits for a person's decision (emitted by
// an approver that asks remotely, the gateway's).
type ApprovalRequired struct {
	CallID      string `json:"call_id"`
	Name        string `json:"name"`
	Arguments   string `json:"arguments"`
	TimeoutMS   int64  `json:"timeout_ms"`
	Description string `json:"description"`
}

// Call is the tool call awaiting approval.
func (u ApprovalRequired) Call() llm.ToolCall {
	return llm.ToolCall{ID: u.CallID, Name: u.Name, Arguments: u.Arguments}
}

// SubagentStart and SubagentEnd bracket a child session the turn runs
// (emitted by the agent's delegate tool); several may overlap.
type SubagentStart struct {
	Subagent SubagentEvent `json:"subagent"`
}

type SubagentEnd struct {
	Subagent SubagentEvent `json:"subagent"`
}

// Steered: a message of Input.Steer joined the turn.
type Steered struct {
	ID   string `json:"steered_turn_id"`
	Text string `json:"text"`
}

// TodoChanged: the session's plan changed (and was stored).
type TodoChanged struct {
	Items []tool.TodoItem `json:"items"`
}

// Finished: the turn ended with Result.
type Finished struct {
	Result Result `json:"result"`
}

func (TextDelta) updateKind() string        { return "text_delta" }
func (ReasoningDelta) updateKind() string   { return "reasoning_delta" }
func (Discard) updateKind() string          { return "discard" }
func (CallStarted) updateKind() string      { return "call_started" }
func (CallFailed) updateKind() string       { return "call_failed" }
func (Fallback) updateKind() string         { return "fallback" }
func (Handoff) updateKind() string          { return "handoff" }
func (Compression) updateKind() string      { return "compression" }
func (Guard) updateKind() string            { return "guard" }
func (Continuation) updateKind() string     { return "continuation" }
func (Pressure) updateKind() string         { return "pressure" }
func (SessionContinued) updateKind() string { return "session_continued" }
func (SubagentStatus) updateKind() string   { return "subagent_status" }
func (StatusLine) updateKind() string       { return "status_line" }
func (ToolStarted) updateKind() string      { return "tool_started" }
func (ToolFinished) updateKind() string     { return "tool_finished" }
func (ApprovalRequired) updateKind() string { return "approval_required" }
func (SubagentStart) updateKind() string    { return "subagent_started" }
func (SubagentEnd) updateKind() string      { return "subagent_finished" }
func (Steered) updateKind() string          { return "turn_steered" }
func (TodoChanged) updateKind() string      { return "todo" }
func (PromptRebuilt) updateKind() string    { return "prompt_rebuilt" }
func (Finished) updateKind() string         { return "turn_finished" }

// UnknownUpdateError is DecodeUpdate's answer for a kind it does not know
// (a newer server's): clients skip such updates.
type UnknownUpdateError struct{ Kind string }

func (e *UnknownUpdateError) Error() string { return "unknown update kind " + e.Kind }

// DecodeUpdate decodes an update from its kind (KindOf) and JSON, as a
// client of the gateway reads them.
func DecodeUpdate(kind string, data []byte) (Update, error) {
	var (
		u   Update
		err error
	)
	switch kind {
	case "text_delta":
		u, err = decodeAs[TextDelta](data)
	case "reasoning_delta":
		u, err = decodeAs[ReasoningDelta](data)
	case "discard":
		u = Discard{}
	case "call_started":
		u, err = decodeAs[CallStarted](data)
	case "call_failed":
		u, err = decodeAs[CallFailed](data)
	case "fallback":
		u, err = decodeAs[Fallback](data)
	case "compression":
		u, err = decodeAs[Compression](data)
	case "guard":
		u, err = decodeAs[Guard](data)
	case "continuation":
		u, err = decodeAs[Continuation](data)
	case "pressure":
		u, err = decodeAs[Pressure](data)
	case "session_continued":
		u, err = decodeAs[SessionContinued](data)
	case "handoff":
		u, err = decodeAs[Handoff](data)
	case "subagent_status":
		u, err = decodeAs[SubagentStatus](data)
	case "status_line":
		u, err = decodeAs[StatusLine](data)
	case "tool_started":
		u, err = decodeAs[ToolStarted](data)
	case "tool_finished":
		u, err = decodeAs[ToolFinished](data)
	case "approval_required":
		u, err = decodeAs[ApprovalRequired](data)
	case "subagent_started":
		u, err = decodeAs[SubagentStart](data)
	case "subagent_finished":
		u, err = decodeAs[SubagentEnd](data)
	case "turn_steered":
		u, err = decodeAs[Steered](data)
	case "todo":
		u, err = decodeAs[TodoChanged](data)
	case "prompt_rebuilt":
		u, err = decodeAs[PromptRebuilt](data)
	case "turn_finished":
		u, err = decodeAs[Finished](data)
	default:
		return nil, &UnknownUpdateError{Kind: kind}
	}
	if err != nil {
		return nil, fmt.Errorf("decoding %s update: %w", kind, err)
	}
	if t, ok := u.(ToolFinished); ok && t.Took == 0 {
		t.Took = time.Duration(t.DurationMS) * time.Millisecond
		u = t
	}
	return u, nil
}

func decodeAs[T Update](data []byte) (Update, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return v, nil
}
