// Package observe implements turn.Observer with OpenTelemetry: a span tree
// per turn (turn → "chat <model>" per attempt, "execute_tool <tool>"),
// GenAI semantic-convention attributes, metrics, and content captured
// according to a capture mode with secrets redacted. Setup configures
// exporters the standard OTel way (OTEL_EXPORTER_OTLP_* and friends) plus
// the telemetry section of config.yaml; Recorder keeps a turn's events in
// the store for `talaria trace`.
package observe

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/turn"
)

// ScopeName is the instrumentation scope of Talaria's spans and metrics.
const ScopeName = "github.com/talaria-agent/talaria/observe"

// Options configures an Observer.
type Options struct {
	// TracerProvider and MeterProvider receive the spans and metrics; a nil
	// one records nothing of its kind.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// Capture is the content capture mode (default redacted); MaxContent
	// bounds one content attribute in redacted mode.
	Capture    Capture
	MaxContent int
	// OwnKeys are the API keys Talaria holds: never recorded, in any mode.
	OwnKeys []string
	// Spans, when set, keeps where each turn's span is (a "span" turn
	// event), so a turn continued after its process died links its span
	// to the dead attempt's (see spanlink.go).
	Spans SpanStore
}

// Observer is a turn.Observer that emits OpenTelemetry spans and metrics.
// It is safe for concurrent use by any number of turns.
type Observer struct {
	tracer trace.Tracer
	inst   *instruments
	scrub  *Scrubber
	spans  SpanStore
}

// New builds an Observer.
func New(opt Options) (*Observer, error) {
	if opt.Capture == "" {
		opt.Capture = CaptureRedacted
	}
	o := &Observer{scrub: NewScrubber(opt.Capture, opt.MaxContent, opt.OwnKeys), spans: opt.Spans}
	if opt.TracerProvider != nil {
		o.tracer = opt.TracerProvider.Tracer(ScopeName)
	}
	if opt.MeterProvider != nil {
		in, err := newInstruments(opt.MeterProvider.Meter(ScopeName))
		if err != nil {
			return nil, err
		}
		o.inst = in
	}
	return o, nil
}

// Attribute keys (GenAI semantic conventions, then Talaria's).
const (
	attrOperation      = "gen_ai.operation.name"
	attrProvider       = "gen_ai.provider.name"
	attrRequestModel   = "gen_ai.request.model"
	attrResponseModel  = "gen_ai.response.model"
	attrResponseID     = "gen_ai.response.id"
	attrFinishReasons  = "gen_ai.response.finish_reasons"
	attrInputTokens    = "gen_ai.usage.input_tokens"
	attrOutputTokens   = "gen_ai.usage.output_tokens"
	attrCacheRead      = "gen_ai.usage.cache_read.input_tokens"
	attrCacheWrite     = "gen_ai.usage.cache_creation.input_tokens"
	attrReasoning      = "gen_ai.usage.reasoning.output_tokens"
	attrTokenType      = "gen_ai.token.type"
	attrConversation   = "gen_ai.conversation.id"
	attrInputMessages  = "gen_ai.input.messages"
	attrOutputMessages = "gen_ai.output.messages"
	attrSystem         = "gen_ai.system_instructions"
	attrMaxTokens      = "gen_ai.request.max_tokens"
	attrToolName       = "gen_ai.tool.name"
	attrToolCallID     = "gen_ai.tool.call.id"
	attrToolArgs       = "gen_ai.tool.call.arguments"
	attrToolResult     = "gen_ai.tool.call.result"
	attrErrorType      = "error.type"
	attrHTTPStatus     = "http.response.status_code"
	attrCostSource     = "talaria.cost.source" // call, compression
)

// StartTurn opens the turn's root span.
func (o *Observer) StartTurn(ctx context.Context, t turn.TurnInfo) turn.TurnObserver {
	to := &turnObs{o: o, info: t, tools: map[string]trace.Span{}}
	if o.tracer != nil {
		attrs := []attribute.KeyValue{
			attribute.String("talaria.session.id", t.SessionID),
			attribute.String("talaria.turn.id", t.TurnID),
			attribute.String(attrConversation, t.SessionID),
			attribute.String(attrProvider, t.Provider),
			attribute.String(attrRequestModel, t.Model),
			attribute.Bool("talaria.unattended", t.Unattended),
		}
		if t.LeaseToken != 0 {
			attrs = append(attrs, attribute.Int64("talaria.lease.token", t.LeaseToken))
		}
		if h := t.Handoff; h != nil {
			// The dead node's attempt never ended its span; the same
			// talaria.turn.id finds it, these say it was continued here.
			attrs = append(attrs, attribute.Int("talaria.handoff.count", h.Count),
				attribute.String("talaria.handoff.from", h.From), attribute.String("talaria.handoff.reason", h.Reason))
		}
		if t.Message != nil {
			if s, ok := o.scrub.Content(t.Message.Text()); ok {
				attrs = append(attrs, attribute.String("talaria.user_message", s))
			}
		}
		opts := []trace.SpanStartOption{trace.WithTimestamp(t.Start), trace.WithAttributes(attrs...)}
		if l, ok := o.deadAttempt(ctx, t); ok {
			opts = append(opts, trace.WithLinks(l))
		}
		to.ctx, to.span = o.tracer.Start(ctx, "turn", opts...)
		o.keepSpan(ctx, t, to.span.SpanContext())
	} else {
		to.ctx = ctx
	}
	return to
}

// turnObs follows one turn: its root span, the attempt in flight and the
// tool calls running (several at once for parallel read-only tools).
type turnObs struct {
	o    *Observer
	info turn.TurnInfo
	ctx  context.Context
	span trace.Span // nil without a tracer

	mu       sync.Mutex
	call     trace.Span
	callAttr []attribute.KeyValue // metric attributes of the call in flight
	tools    map[string]trace.Span
	// answeredBy is the model named by the latest answer: the turn's
	// response model, which a fallback or a router changes.
	answeredBy string
}

func (t *turnObs) Event(ev *turn.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch ev.Kind {
	case turn.EventRequest:
		t.request(ev)
	case turn.EventCallEnd:
		t.callEnd(ev)
	case turn.EventCallFailed:
		t.callFailed(ev)
	case turn.EventToolStart:
		t.toolStart(ev)
	case turn.EventToolEnd:
		t.toolEnd(ev)
	case turn.EventCompression:
		t.addEvent("compression", attribute.String("talaria.compression.outcome", ev.Outcome),
			attribute.Int("talaria.compression.pass", ev.Pass), attribute.Int("talaria.compression.before_tokens", ev.Before),
			attribute.Int("talaria.compression.after_tokens", ev.After), attribute.Float64("talaria.cost_usd", ev.CostUSD))
		if in := t.o.inst; in != nil {
			in.compressions.Add(t.ctx, 1, metric.WithAttributes(attribute.String("talaria.compression.outcome", ev.Outcome)))
			// The summary call is paid for too: the turn's cost includes it,
			// so the cost counter must, or its sum falls short of the turns'.
			if ev.CostUSD > 0 {
				in.cost.Add(t.ctx, ev.CostUSD, metric.WithAttributes(attribute.String(attrProvider, ev.Provider),
					attribute.String(attrResponseModel, ev.Model), attribute.String(attrCostSource, "compression")))
			}
			// Its tokens too, as a chat call of the summarizer model.
			if u := ev.Usage; u.Reported {
				attrs := []attribute.KeyValue{attribute.String(attrOperation, "chat"), attribute.String(attrProvider, ev.Provider),
					attribute.String(attrRequestModel, ev.Model), attribute.String(attrResponseModel, ev.Model)}
				in.tokens.Record(t.ctx, u.PromptTokens(), metric.WithAttributes(append(attrs, attribute.String(attrTokenType, "input"))...))
				in.tokens.Record(t.ctx, u.OutputTokens, metric.WithAttributes(append(attrs, attribute.String(attrTokenType, "output"))...))
			}
		}
	case turn.EventGuard:
		t.addEvent("guard", attribute.String("talaria.guard", ev.Guard), attribute.String("talaria.guard.action", ev.Action))
		if in := t.o.inst; in != nil {
			in.guards.Add(t.ctx, 1, metric.WithAttributes(attribute.String("talaria.guard", ev.Guard), attribute.String("talaria.guard.action", ev.Action)))
		}
	case turn.EventFallback:
		t.addEvent("fallback", attribute.String("talaria.fallback.from", ev.From), attribute.String("talaria.fallback.to", ev.To), attribute.String(attrErrorType, ev.Class))
		if in := t.o.inst; in != nil {
			in.fallbacks.Add(t.ctx, 1, metric.WithAttributes(attribute.String("talaria.fallback.from", ev.From),
				attribute.String("talaria.fallback.to", ev.To), attribute.String(attrErrorType, ev.Class)))
		}
	case turn.EventRotation:
		t.addEvent("key_rotation", attribute.String(attrProvider, ev.Provider), attribute.String(attrErrorType, ev.Class))
	case turn.EventLeaseLost:
		t.addEvent("lease_lost")
	case turn.EventPromptRebuilt:
		t.addEvent("prompt_rebuilt", attribute.Int("talaria.prompt.tools_added", len(ev.Prompt.ToolsAdded)),
			attribute.Int("talaria.prompt.tools_removed", len(ev.Prompt.ToolsRemoved)),
			attribute.Bool("talaria.prompt.memory", ev.Prompt.Memory))
	case turn.EventSubagentStart, turn.EventSubagentStop:
		t.addEvent(ev.Kind.String(), attribute.String("talaria.subagent.session", ev.To), attribute.String("talaria.subagent.outcome", ev.Outcome))
	}
}

func (t *turnObs) addEvent(name string, attrs ...attribute.KeyValue) {
	if t.span != nil {
		t.span.AddEvent(name, trace.WithAttributes(attrs...))
	}
}

// request opens the attempt's span, "chat <model>" per the GenAI
// conventions ({operation} {model}).
func (t *turnObs) request(ev *turn.Event) {
	t.endCall("superseded")
	t.callAttr = []attribute.KeyValue{
		attribute.String(attrOperation, "chat"),
		attribute.String(attrProvider, ev.Provider),
		attribute.String(attrRequestModel, ev.Model),
	}
	if t.o.tracer == nil {
		return
	}
	attrs := append([]attribute.KeyValue{
		attribute.Int("talaria.attempt", ev.Attempt),
		attribute.Int("talaria.request.estimated_tokens", ev.EstimatedTokens),
	}, t.callAttr...)
	if ev.Request != nil {
		attrs = append(attrs, attribute.Int("talaria.request.messages", len(ev.Request.Messages)),
			attribute.Int("talaria.request.tools", len(ev.Request.Tools)))
		if ev.Request.MaxTokens > 0 {
			attrs = append(attrs, attribute.Int(attrMaxTokens, ev.Request.MaxTokens))
		}
		if s, ok := t.o.scrub.Content(messagesJSON(ev.Request.Messages)); ok {
			attrs = append(attrs, attribute.String(attrInputMessages, s))
		}
		// The system prompt is part of what the model saw: traced under
		// the same capture mode and redaction as the messages.
		if ev.Request.System != "" {
			if s, ok := t.o.scrub.Content(ev.Request.System); ok {
				attrs = append(attrs, attribute.String(attrSystem, s))
			}
		}
	}
	_, t.call = t.o.tracer.Start(t.ctx, "chat "+ev.Model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(ev.Time), trace.WithAttributes(attrs...))
}

func (t *turnObs) callEnd(ev *turn.Event) {
	u := ev.Usage
	t.answeredBy = ev.ResponseModel
	mattrs := append(t.callAttr, attribute.String(attrResponseModel, ev.ResponseModel))
	if in := t.o.inst; in != nil {
		if u.Reported {
			in.tokens.Record(t.ctx, u.PromptTokens(), metric.WithAttributes(append(mattrs, attribute.String(attrTokenType, "input"))...))
			in.tokens.Record(t.ctx, u.OutputTokens, metric.WithAttributes(append(mattrs, attribute.String(attrTokenType, "output"))...))
		}
		in.duration.Record(t.ctx, ev.Latency.Seconds(), metric.WithAttributes(mattrs...))
		if ev.Price == turn.PriceKnown {
			in.cost.Add(t.ctx, ev.CostUSD, metric.WithAttributes(attribute.String(attrProvider, ev.Provider),
				attribute.String(attrResponseModel, ev.ResponseModel), attribute.String(attrCostSource, "call")))
		}
		for _, c := range [...]struct {
			kind string
			n    int64
		}{{"read", u.CacheReadTokens}, {"write", u.CacheWriteTokens}} {
			if c.n > 0 {
				in.cacheTokens.Add(t.ctx, c.n, metric.WithAttributes(attribute.String(attrProvider, ev.Provider),
					attribute.String(attrResponseModel, ev.ResponseModel), attribute.String("talaria.cache.kind", c.kind)))
			}
		}
		in.calls.Add(t.ctx, 1, metric.WithAttributes(attribute.String(attrProvider, ev.Provider),
			attribute.String(attrResponseModel, ev.ResponseModel), attribute.String("talaria.pricing", ev.Price.String())))
	}
	if t.call == nil {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.String(attrResponseModel, ev.ResponseModel),
		attribute.StringSlice(attrFinishReasons, []string{string(ev.FinishReason)}),
		attribute.String("talaria.pricing", ev.Price.String()),
	}
	if u.Reported {
		attrs = append(attrs,
			attribute.Int64(attrInputTokens, u.PromptTokens()),
			attribute.Int64(attrOutputTokens, u.OutputTokens),
			attribute.Int64(attrCacheRead, u.CacheReadTokens),
			attribute.Int64(attrCacheWrite, u.CacheWriteTokens))
		if u.ReasoningTokens > 0 {
			attrs = append(attrs, attribute.Int64(attrReasoning, u.ReasoningTokens))
		}
	}
	if ev.Price == turn.PriceKnown {
		attrs = append(attrs, attribute.Float64("talaria.cost_usd", ev.CostUSD))
	}
	if ev.TimeToFirstToken > 0 {
		attrs = append(attrs, attribute.Float64("talaria.time_to_first_token_s", ev.TimeToFirstToken.Seconds()))
	}
	if r := ev.Response; r != nil {
		if r.ID != "" {
			attrs = append(attrs, attribute.String(attrResponseID, r.ID))
		}
		if s, ok := t.o.scrub.Content(messagesJSON([]llm.Message{r.Message})); ok {
			attrs = append(attrs, attribute.String(attrOutputMessages, s))
		}
	}
	t.call.SetAttributes(attrs...)
	t.call.End()
	t.call = nil
}

func (t *turnObs) callFailed(ev *turn.Event) {
	if in := t.o.inst; in != nil {
		in.duration.Record(t.ctx, ev.Latency.Seconds(), metric.WithAttributes(append(t.callAttr, attribute.String(attrErrorType, ev.Class))...))
		if ev.Decision == "retry" {
			in.retries.Add(t.ctx, 1, metric.WithAttributes(attribute.String(attrProvider, ev.Provider),
				attribute.String(attrRequestModel, ev.Model), attribute.String(attrErrorType, ev.Class)))
		}
	}
	if t.call == nil {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.String(attrErrorType, ev.Class),
		attribute.String("talaria.decision", ev.Decision),
		attribute.Bool("talaria.retryable", ev.Retryable),
	}
	if ev.Status != 0 {
		attrs = append(attrs, attribute.Int(attrHTTPStatus, ev.Status))
	}
	if ev.Wait > 0 {
		attrs = append(attrs, attribute.Float64("talaria.retry.wait_s", ev.Wait.Seconds()))
	}
	t.call.SetAttributes(attrs...)
	msg := ev.Class
	if ev.Err != nil {
		msg = t.o.scrub.Own(ev.Err.Error())
	}
	t.call.SetStatus(codes.Error, msg)
	t.call.End()
	t.call = nil
}

// endCall closes an attempt left open (an interrupt, a panic, a lease
// loss mid-call): no span outlives its turn.
func (t *turnObs) endCall(why string) {
	if t.call == nil {
		return
	}
	t.call.SetAttributes(attribute.String(attrErrorType, why))
	t.call.SetStatus(codes.Error, why)
	t.call.End()
	t.call = nil
}

func (t *turnObs) toolStart(ev *turn.Event) {
	if t.o.tracer == nil {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.String(attrOperation, "execute_tool"),
		attribute.String(attrToolName, ev.Call.Name),
		attribute.String(attrToolCallID, ev.Call.ID),
	}
	if s, ok := t.o.scrub.Content(ev.Call.Arguments); ok {
		attrs = append(attrs, attribute.String(attrToolArgs, s))
	}
	_, span := t.o.tracer.Start(t.ctx, "execute_tool "+ev.Call.Name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(ev.Time), trace.WithAttributes(attrs...))
	if old := t.tools[ev.Call.ID]; old != nil {
		old.End()
	}
	t.tools[ev.Call.ID] = span
}

func (t *turnObs) toolEnd(ev *turn.Event) {
	if in := t.o.inst; in != nil {
		name := ev.Call.Name
		if ev.ToolUnknown {
			name = "other" // a made-up name must not grow the label set
		}
		in.tools.Add(t.ctx, 1, metric.WithAttributes(attribute.String(attrToolName, name), attribute.Bool("talaria.tool.error", ev.ToolError)))
	}
	span := t.tools[ev.Call.ID]
	if span == nil {
		return
	}
	delete(t.tools, ev.Call.ID)
	span.SetAttributes(attribute.Int("talaria.tool.result_bytes", ev.ResultBytes))
	if s, ok := t.o.scrub.Content(ev.ToolResult); ok {
		span.SetAttributes(attribute.String(attrToolResult, s))
	}
	if ev.ToolError {
		span.SetAttributes(attribute.String(attrErrorType, "tool_error"))
		span.SetStatus(codes.Error, "the tool returned an error")
	}
	span.End()
}

// ToolContext makes the call's span the parent of whatever the tool
// starts: a subagent's turn nests under its delegate call.
func (t *turnObs) ToolContext(ctx context.Context, call llm.ToolCall) context.Context {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.tools[call.ID]; s != nil {
		return trace.ContextWithSpan(ctx, s)
	}
	return ctx
}

// End closes everything the turn opened, whatever ended it, and counts the
// turn by its exit.
func (t *turnObs) End(res *turn.Result) {
	t.mu.Lock()
	defer t.mu.Unlock()
	why := string(res.Exit)
	if why == "" || why == string(turn.ExitCompleted) {
		why = "turn_ended"
	}
	t.endCall(why)
	for id, s := range t.tools {
		s.SetAttributes(attribute.String(attrErrorType, why))
		s.SetStatus(codes.Error, why)
		s.End()
		delete(t.tools, id)
	}
	if in := t.o.inst; in != nil {
		exit := metric.WithAttributes(attribute.String("talaria.exit", string(res.Exit)))
		in.turns.Add(t.ctx, 1, exit)
		took := res.Duration
		if took <= 0 && !t.info.Start.IsZero() {
			took = time.Since(t.info.Start)
		}
		in.turnDuration.Record(t.ctx, took.Seconds(), exit)
	}
	if t.span == nil {
		return
	}
	u := res.Usage
	attrs := []attribute.KeyValue{
		attribute.String("talaria.exit", string(res.Exit)),
		attribute.Int("talaria.api_calls", res.APICalls),
		attribute.Int("talaria.tool_calls", res.ToolCalls),
		attribute.Int("talaria.compactions", res.Compactions),
		attribute.Int64(attrInputTokens, u.PromptTokens()),
		attribute.Int64(attrOutputTokens, u.OutputTokens),
		attribute.Int64(attrCacheRead, u.CacheReadTokens),
		attribute.Int64(attrCacheWrite, u.CacheWriteTokens),
		attribute.String("talaria.pricing", string(res.Pricing)),
	}
	if t.answeredBy != "" {
		attrs = append(attrs, attribute.String(attrResponseModel, t.answeredBy))
	}
	if res.SessionID != t.info.SessionID {
		attrs = append(attrs, attribute.String("talaria.session.continued_as", res.SessionID))
	}
	if res.Pricing.HasCost() {
		attrs = append(attrs, attribute.Float64("talaria.cost_usd", res.CostUSD))
	}
	if s, ok := t.o.scrub.Content(res.FinalText); ok && res.FinalText != "" {
		attrs = append(attrs, attribute.String("talaria.final_text", s))
	}
	t.span.SetAttributes(attrs...)
	if !res.OK() && res.Exit != turn.ExitBudgetExhausted {
		reason := string(res.Exit)
		if res.Failure != nil && res.Failure.Reason() != "" {
			reason = res.Failure.Reason()
		}
		t.span.SetAttributes(attribute.String(attrErrorType, reason))
		msg := reason
		if res.Failure != nil {
			msg = t.o.scrub.Own(res.Failure.Message)
		}
		t.span.SetStatus(codes.Error, msg)
	}
	t.span.End()
}

// messagesJSON renders messages in the GenAI conventions' shape: role and
// parts (text, tool calls, tool results). Images are named, not inlined.
func messagesJSON(msgs []llm.Message) string {
	type part struct {
		Type      string `json:"type"`
		Content   string `json:"content,omitempty"`
		ID        string `json:"id,omitempty"`
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments,omitempty"`
	}
	type message struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}
	out := make([]message, 0, len(msgs))
	for _, m := range msgs {
		mm := message{Role: string(m.Role)}
		// Reasoning the provider returned in text (a summary, a thinking
		// block) is what the model thought before answering.
		if r := m.Reasoning; r != nil && r.Text != "" {
			mm.Parts = append(mm.Parts, part{Type: "reasoning", Content: r.Text})
		}
		if m.Role == llm.RoleTool {
			mm.Parts = append(mm.Parts, part{Type: "tool_call_response", ID: m.ToolCallID, Content: m.Text()})
		} else {
			for _, p := range m.Content {
				if p.Type == llm.PartText {
					mm.Parts = append(mm.Parts, part{Type: "text", Content: p.Text})
				} else {
					mm.Parts = append(mm.Parts, part{Type: string(p.Type)})
				}
			}
		}
		for _, c := range m.ToolCalls {
			mm.Parts = append(mm.Parts, part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		out = append(out, mm)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return ""
	}
	return string(b)
}
