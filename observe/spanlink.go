package observe

import (
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// SpanStore is where the Observer keeps each turn attempt's span context.
type SpanStore interface {
	AppendTurnEvents(ctx context.Context, evs ...store.TurnEvent) error
	TurnEvents(ctx context.Context, sessionID, turnID string) ([]store.TurnEvent, error)
}

// SpanEventKind is the turn event that says where an attempt's span is.
// Its Seq is SpanSeq plus the attempt's handoff count (0: the first), above
// a turn's recorded events and its handoffs.
const (
	SpanEventKind = "span"
	SpanSeq       = 1 << 21
)

// spanRef is a "span" event's detail.
type spanRef struct {
	TraceID string `json:"trace_id"`
	SpanID  string `json:"span_id"`
}

// keepSpan stores where the turn's span is, as the turn starts: the
// process may die before the span ends, and the attempt that continues
// the turn links to it. One write per traced turn; a failure only costs
// the link.
func (o *Observer) keepSpan(ctx context.Context, t turn.TurnInfo, sc trace.SpanContext) {
	if o.spans == nil || !sc.IsValid() || t.SessionID == "" || t.TurnID == "" {
		return
	}
	n := 0
	if t.Handoff != nil {
		n = t.Handoff.Count
	}
	d, _ := json.Marshal(spanRef{TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String()})
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = o.spans.AppendTurnEvents(wctx, store.TurnEvent{SessionID: t.SessionID, TurnID: t.TurnID, Seq: SpanSeq + n,
		Kind: SpanEventKind, Name: "turn", Start: t.Start, Detail: string(d)})
}

// deadAttempt is the link to the span of the attempt a continued turn
// takes over: the latest one kept before this handoff.
func (o *Observer) deadAttempt(ctx context.Context, t turn.TurnInfo) (trace.Link, bool) {
	if o.spans == nil || t.Handoff == nil {
		return trace.Link{}, false
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	evs, err := o.spans.TurnEvents(rctx, t.SessionID, t.TurnID)
	if err != nil {
		return trace.Link{}, false
	}
	var best *store.TurnEvent
	for i := range evs {
		e := &evs[i]
		if e.Kind == SpanEventKind && e.Seq < SpanSeq+t.Handoff.Count && (best == nil || e.Seq > best.Seq) {
			best = e
		}
	}
	if best == nil {
		return trace.Link{}, false
	}
	var r spanRef
	if json.Unmarshal([]byte(best.Detail), &r) != nil {
		return trace.Link{}, false
	}
	tid, err1 := trace.TraceIDFromHex(r.TraceID)
	sid, err2 := trace.SpanIDFromHex(r.SpanID)
	if err1 != nil || err2 != nil {
		return trace.Link{}, false
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	return trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{
		attribute.String("talaria.link", "handoff"), attribute.Int("talaria.handoff.count", t.Handoff.Count)}}, true
}
