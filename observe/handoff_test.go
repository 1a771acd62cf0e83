package observe_test

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/talaria-agent/talaria/observe"
	"github.com/talaria-agent/talaria/turn"
)

// A turn continued after its node died says so on its span: how many
// handoffs, from which node, why; the same talaria.turn.id finds the
// attempt before it.
func TestTurnSpanSaysHandoff(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	o, err := observe.New(observe.Options{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []*turn.Handoff{nil, {From: "node-a", To: "node-b", Reason: "its lease expired", Count: 2, Max: 2}} {
		o.StartTurn(context.Background(), turn.TurnInfo{SessionID: "s", TurnID: "t1", Start: time.Now(), Handoff: h}).
			End(&turn.Result{SessionID: "s", TurnID: "t1", Exit: turn.ExitCompleted})
	}
	got := spans.GetSpans()
	if len(got) != 2 {
		t.Fatalf("%d spans", len(got))
	}
	for i, s := range got {
		attrs := map[string]string{}
		for _, a := range s.Attributes {
			attrs[string(a.Key)] = a.Value.Emit()
		}
		want := map[string]string{"talaria.turn.id": "t1"}
		if i == 1 {
			want["talaria.handoff.count"], want["talaria.handoff.from"], want["talaria.handoff.reason"] = "2", "node-a", "its lease expired"
		} else if _, ok := attrs["talaria.handoff.count"]; ok {
			t.Errorf("a turn that was not handed off has handoff attributes: %v", attrs)
		}
		for k, v := range want {
			if attrs[k] != v {
				t.Errorf("span %d: %s = %q; want %q", i, k, attrs[k], v)
			}
		}
	}
}
