package turn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/tool"
)

// Observer watches turns for telemetry (traces, metrics, a recorded event
// log). It is asked once per turn; the TurnObserver it returns receives
// that turn's events and then End, exactly once, whatever ended the turn
// (completion, failure, interrupt, lease loss, panic), so anything it
// opened can be closed there.
//
// With no observer attached the engine builds no events at all: observing
// costs nothing when it is off (BenchmarkObserverOff).
type Observer interface {
	// StartTurn is called before the turn does anything. ctx is the turn's
	// context (it may carry a caller's trace); a nil result ignores the turn.
	StartTurn(ctx context.Context, t TurnInfo) TurnObserver
}

// TurnObserver receives one turn's events. Event may be called from
// several goroutines at once (parallel read-only tools) and must return
// quickly; ev is only valid during the call.
type TurnObserver interface {
	Event(ev *Event)
	// End is called once, after the finalizer, with the turn's result.
	End(res *Result)
}

// TurnInfo describes a turn as it starts.
type TurnInfo struct {
	SessionID string
	TurnID    string
	// LeaseToken is the fencing token of the turn lease the turn runs
	// under (acquired by the caller before the turn starts); 0 when
	// the turn runs unfenced.
	LeaseToken int64
	Provider   string // the primary route
	Model      string
	Unattended bool
	// Message is the user's message.
	Message *llm.Message
	Start   time.Time
	// Handoff is set when this turn continues one whose node died
	// (Input.Handoff): the attempt before it ran under the same TurnID.
	Handoff *Handoff
}

// EventKind says which field set of an Event is meaningful.
type EventKind uint8

const (
	// EventRequest: a model request is about to be sent. Provider, Model,
	// Attempt, EstimatedTokens, RequestBytes; Request is the request
	// without its API key (an observer decides how much of it to capture).
	EventRequest EventKind = iota + 1
	// EventCallEnd: the call answered. Latency, TimeToFirstToken, Usage,
	// CostUSD/Price, FinishReason, ResponseModel, Response.
	EventCallEnd
	// EventCallFailed: the call failed. Class, Retryable, Status, Err,
	// Decision ("retry", "rotate", "clamp", "repair", "compress",
	// "fallback", "stop"), Wait (before a retry), Latency.
	EventCallFailed
	// EventToolStart / EventToolEnd bracket a tool call: Call; at the end
	// Duration, ToolResult, ToolError, ResultBytes.
	EventToolStart
	EventToolEnd
	// EventCompression: one compression pass. Before/After (estimated
	// tokens), Pass, Outcome ("compressed", "under_target", "no_progress",
	// "failed"), Duration, Usage and CostUSD of the summary call, whose
	// Provider and Model are the summarizer's.
	EventCompression
	// EventGuard: a guard fired. Guard ("identical_calls", "tool_loop",
	// "said_but_stopped", "empty_response", "length_continuation",
	// "mid_sentence_stop", "iteration_budget"), Action (what it did).
	EventGuard
	// EventFallback: the turn moved to the next route. From, To, Class.
	EventFallback
	// EventRotation: the next call uses another key of the same provider.
	EventRotation
	// EventLeaseLost: another process took over the session's lease.
	EventLeaseLost
	// EventSubagentStart / EventSubagentStop: a delegated child turn. To is
	// the child session; Outcome its exit at the stop.
	EventSubagentStart
	EventSubagentStop
	// EventTodo: the model's plan changed (the todo tool). Todo.
	EventTodo
	// EventPromptRebuilt: the session's capabilities changed, so its
	// system prompt was rebuilt at the start of the turn. Prompt.
	EventPromptRebuilt
)

var eventKindNames = [...]string{
	EventRequest: "request", EventCallEnd: "call", EventCallFailed: "call_failed",
	EventToolStart: "tool_start", EventToolEnd: "tool", EventCompression: "compression",
	EventGuard: "guard", EventFallback: "fallback", EventRotation: "rotation",
	EventLeaseLost: "lease_lost", EventSubagentStart: "subagent_start", EventSubagentStop: "subagent_stop",
	EventTodo: "todo", EventPromptRebuilt: "prompt_rebuilt",
}

func (k EventKind) String() string {
	if int(k) < len(eventKindNames) && eventKindNames[k] != "" {
		return eventKindNames[k]
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// Price says how a call's cost is known.
type Price uint8

const (
	PriceUnknown      Price = iota // no price for the model that answered
	PriceKnown                     // CostUSD is the call's cost
	PriceSubscription              // the route is included in a subscription: no per-call cost
)

func (p Price) String() string { return string(p.Pricing()) }

// Pricing is the turn-level Pricing of a turn made of this one call: the
// call's price and the turn's share one set of wire strings.
func (p Price) Pricing() Pricing {
	switch p {
	case PriceKnown:
		return PricingPriced
	case PriceSubscription:
		return PricingSubscription
	}
	return PricingUnknown
}

// Event is one thing that happened in a turn. Only the fields its Kind
// names are set.
type Event struct {
	Kind EventKind
	Time time.Time

	// The route in use.
	Provider string
	Model    string
	Attempt  int // the call's number within the turn, from 1

	// EventRequest
	Request         *llm.Request
	EstimatedTokens int
	RequestBytes    int

	// EventCallEnd / EventCallFailed
	Response         *llm.Response
	ResponseModel    string
	Usage            llm.Usage
	CostUSD          float64
	Price            Price
	FinishReason     llm.FinishReason
	Latency          time.Duration
	TimeToFirstToken time.Duration // 0: nothing streamed
	Class            string
	Retryable        bool
	Status           int
	Err              error
	Decision         string
	Wait             time.Duration

	// EventToolStart / EventToolEnd
	Call        llm.ToolCall
	ToolResult  string
	ToolError   bool
	ResultBytes int
	// ToolUnknown: the model called a tool the turn does not offer (its
	// name is the model's: metrics count it as "other", so labels stay
	// bounded).
	ToolUnknown bool
	Duration    time.Duration

	// EventCompression
	Before, After int
	Pass          int
	Outcome       string

	// EventGuard
	Guard  string
	Action string

	// EventFallback / EventRotation / subagents
	From, To string

	// EventTodo
	Todo []tool.TodoItem

	// EventPromptRebuilt
	Prompt *PromptRebuilt
}

// MultiObserver fans a turn out to several observers.
func MultiObserver(obs ...Observer) Observer {
	var list multiObserver
	for _, o := range obs {
		if o != nil {
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return list
}

type multiObserver []Observer

func (m multiObserver) StartTurn(ctx context.Context, t TurnInfo) TurnObserver {
	var turns multiTurn
	for _, o := range m {
		if to := o.StartTurn(ctx, t); to != nil {
			turns = append(turns, to)
		}
	}
	if len(turns) == 0 {
		return nil
	}
	return turns
}

type multiTurn []TurnObserver

func (m multiTurn) Event(ev *Event) {
	for _, t := range m {
		t.Event(ev)
	}
}

func (m multiTurn) End(res *Result) {
	for _, t := range m {
		t.End(res)
	}
}

// startObserving asks the configured observer about the turn.
func (e *Engine) startObserving(ctx context.Context, st *state) {
	if e.cfg.Observer == nil {
		return
	}
	st.obs = e.cfg.Observer.StartTurn(ctx, TurnInfo{
		SessionID:  st.sessionID(),
		TurnID:     st.in.TurnID,
		LeaseToken: st.live.fence.Token,
		Provider:   e.route(st).Provider.Name(),
		Model:      e.route(st).Model,
		Unattended: st.in.Unattended,
		Message:    &st.in.Message,
		Start:      st.start,
		Handoff:    st.in.Handoff,
	})
}

// endObserving hands the observer the result. An observer's panic must not
// break the engine's promise that Run never panics.
func (e *Engine) endObserving(st *state, res *Result) {
	if st.obs == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			e.log.Error("observer panicked at turn end", slog.Any("panic", p))
		}
	}()
	st.obs.End(res)
}

// observe sends ev, stamping its time and route. Callers check st.obs != nil
// first so no event is built when nothing observes.
func (e *Engine) observe(st *state, ev *Event) {
	if ev.Time.IsZero() {
		ev.Time = e.cfg.Now()
	}
	if ev.Provider == "" {
		r := e.route(st)
		ev.Provider, ev.Model = r.Provider.Name(), r.Model
	}
	st.obs.Event(ev)
}

// observeGuard reports a guard firing.
func (e *Engine) observeGuard(st *state, guard, action string) {
	if st.obs != nil {
		e.observe(st, &Event{Kind: EventGuard, Guard: guard, Action: action})
	}
}

// observeTool reports a tool call's start (end=false) or end.
func (e *Engine) observeTool(st *state, c llm.ToolCall, res *tool.Result, took time.Duration) {
	if st.obs == nil {
		return
	}
	unknown := true
	if e.cfg.Tools != nil {
		_, known := e.cfg.Tools.Get(c.Name)
		unknown = !known
	}
	if res == nil {
		e.observe(st, &Event{Kind: EventToolStart, Call: c, ToolUnknown: unknown})
		return
	}
	e.observe(st, &Event{Kind: EventToolEnd, Call: c, Duration: took, ToolResult: res.Content,
		ToolError: res.IsError, ResultBytes: len(res.Content), ToolUnknown: unknown})
}

// observeLeaseLost reports that the turn's lease went to another holder.
func (e *Engine) observeLeaseLost(st *state) {
	if st.obs != nil {
		e.observe(st, &Event{Kind: EventLeaseLost, Class: string(ExitLeaseLost)})
	}
}

// observeFailed reports a failed call with the recovery chosen for it.
func (e *Engine) observeFailed(st *state, c failover.Classified, err error, decision string, wait time.Duration) {
	if st.obs == nil {
		return
	}
	e.observe(st, &Event{Kind: EventCallFailed, Attempt: st.res.APICalls, Class: string(c.Class), Retryable: c.Retryable,
		Status: c.Status, Err: err, Decision: decision, Wait: wait, Latency: st.lastLatency, TimeToFirstToken: st.lastTTFT})
}

// decided reports a failed call's recovery once: to the log, the
// observer and the turn's updates (u carries the decision and its figures;
// the route, class and summary are filled in here).
func (e *Engine) decided(st *state, c failover.Classified, err error, u CallFailed) {
	r := e.route(st)
	e.log.Info("api call failed", "session", st.sessionID(), "route", r.Name(),
		"class", c.Class, "status", c.Status, "decision", u.Decision, "error", err)
	if st.obs != nil {
		e.observeFailed(st, c, err, string(u.Decision), u.Wait)
		if u.Decision == DecisionRotate {
			e.observe(st, &Event{Kind: EventRotation, Class: string(c.Class)})
		}
	}
	if st.hooks.listening() {
		u.Provider, u.Model = r.Provider.Name(), r.Model
		u.Class, u.HTTPStatus, u.Retryable, u.Summary = string(c.Class), c.Status, c.Retryable, c.Summary
		st.hooks.Emit(u)
	}
}

// guard reports a guard that acted: to the observer and the updates.
func (e *Engine) guard(st *state, g Guard) {
	e.observeGuard(st, g.Guard, g.Action)
	st.hooks.emit(g)
}

// observeStopped reports a call that the turn's own ending stopped (an
// interrupt, a lease taken over): its class is that ending, not a
// provider's.
func (e *Engine) observeStopped(st *state, err error) {
	if st.obs == nil {
		return
	}
	e.observe(st, &Event{Kind: EventCallFailed, Attempt: st.res.APICalls, Class: string(st.res.Exit), Err: err,
		Decision: "stop", Latency: st.lastLatency, TimeToFirstToken: st.lastTTFT})
}

// observeCompression reports a compression pass when compress returns:
// its outcome follows from the verdict and the error.
func (e *Engine) observeCompression(st *state, start time.Time, cost0 float64, out *compact.Output, err *error, v *verdict) {
	outcome := "compressed"
	switch {
	case errors.Is(*err, compact.ErrUnderTarget):
		outcome = "under_target"
	case errors.Is(*err, compact.ErrNoProgress), errors.Is(*err, compact.ErrNothingToCompress):
		outcome = "no_progress"
	case *err != nil || *v == finish:
		outcome = "failed"
	}
	ev := &Event{Kind: EventCompression, Before: out.Before, After: out.After, Pass: st.budget.Used(),
		Outcome: outcome, Err: *err, Duration: e.cfg.Now().Sub(start), Usage: out.Usage, CostUSD: st.res.CostUSD - cost0}
	// The summary's cost is the summarizer model's (as addAuxUsage prices it).
	if c := e.cfg.Compressor; c != nil && c.Model != "" {
		ev.Provider, ev.Model = e.route(st).Provider.Name(), c.Model
		if p, ok := c.Summarizer.(interface{ Name() string }); ok {
			ev.Provider = p.Name()
		}
	}
	e.observe(st, ev)
}

// ToolContexter is an optional TurnObserver method: the context a tool
// call runs with, so work the tool starts — a delegated subagent's turn —
// nests under the call in a trace. MultiObserver forwards it.
type ToolContexter interface {
	ToolContext(ctx context.Context, call llm.ToolCall) context.Context
}

func (m multiTurn) ToolContext(ctx context.Context, call llm.ToolCall) context.Context {
	for _, t := range m {
		if tc, ok := t.(ToolContexter); ok {
			ctx = tc.ToolContext(ctx, call)
		}
	}
	return ctx
}

// toolScope lets code running inside a tool call report to its turn's
// observer (SubagentStarted, SubagentStopped).
type toolScope struct {
	e    *Engine
	st   *state
	call llm.ToolCall
}

type toolScopeKey struct{}

// toolContext is the context an observed tool call runs with.
func (e *Engine) toolContext(ctx context.Context, st *state, c llm.ToolCall) context.Context {
	if tc, ok := st.obs.(ToolContexter); ok {
		ctx = tc.ToolContext(ctx, c)
	}
	return context.WithValue(ctx, toolScopeKey{}, &toolScope{e: e, st: st, call: c})
}

// SubagentStarted reports, from inside a tool call (a delegate tool), that
// it started a child turn in session child. It does nothing when the turn
// is not observed.
func SubagentStarted(ctx context.Context, child string) {
	if s, ok := ctx.Value(toolScopeKey{}).(*toolScope); ok {
		s.e.observe(s.st, &Event{Kind: EventSubagentStart, Call: s.call, To: child})
	}
}

// SubagentStopped reports that the child turn started with SubagentStarted
// ended, with its exit.
func SubagentStopped(ctx context.Context, child string, exit Exit) {
	if s, ok := ctx.Value(toolScopeKey{}).(*toolScope); ok {
		s.e.observe(s.st, &Event{Kind: EventSubagentStop, Call: s.call, To: child, Outcome: string(exit)})
	}
}
