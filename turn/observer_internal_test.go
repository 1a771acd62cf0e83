package turn

import (
	"context"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
)

// nopProvider is a route provider for states built without running a turn.
type nopProvider struct{}

func (nopProvider) Name() string { return "nop" }
func (nopProvider) Stream(context.Context, *llm.Request) iter.Seq2[llm.Event, error] {
	return func(func(llm.Event, error) bool) {}
}

type countingObserver struct {
	mu     sync.Mutex
	events int
}

func (c *countingObserver) StartTurn(context.Context, TurnInfo) TurnObserver { return c }
func (c *countingObserver) Event(*Event)                                     { c.mu.Lock(); c.events++; c.mu.Unlock() }
func (c *countingObserver) End(*Result)                                      {}

func observerState(t testing.TB, obs Observer) (*Engine, *state) {
	e, err := New(Config{Store: nilStore{}, Routes: []Route{{Provider: nopProvider{}, Model: "m"}}, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	st := e.newState(Input{Session: &store.Session{ID: "s"}, TurnID: "t"})
	e.startObserving(context.Background(), st)
	return e, st
}

// nilStore satisfies Store for states that never write.
type nilStore struct{ Store }

// emitAll sends one of each event the phases emit on a hot path.
func emitAll(e *Engine, st *state, resp *llm.Response, res *tool.Result, call llm.ToolCall) {
	e.observeTool(st, call, nil, 0)
	e.observeTool(st, call, res, time.Millisecond)
	e.observeGuard(st, "identical_calls", "notice")
	e.observeFailed(st, failover.Classified{Class: failover.ClassRateLimit}, nil, "retry", time.Second)
	e.accountCall(st, resp)
	if st.obs != nil {
		e.observe(st, &Event{Kind: EventRequest, Attempt: 1, Request: st.req})
	}
}

// With no observer the engine builds no event: zero allocations.
func TestObserverOffAllocatesNothing(t *testing.T) {
	e, st := observerState(t, nil)
	resp := &llm.Response{Model: "m", Usage: llm.Usage{InputTokens: 10, OutputTokens: 2, Reported: true}}
	res := &tool.Result{Content: "ok"}
	call := llm.ToolCall{ID: "c1", Name: "noop", Arguments: "{}"}
	if n := testing.AllocsPerRun(200, func() { emitAll(e, st, resp, res, call) }); n != 0 {
		t.Fatalf("observing with no observer allocates %.1f times per event set; want 0", n)
	}
	// The same calls do reach an attached observer.
	obs := &countingObserver{}
	e, st = observerState(t, obs)
	emitAll(e, st, resp, res, call)
	if obs.events != 6 {
		t.Fatalf("observer got %d events, want 6", obs.events)
	}
}

func TestMultiObserverFansOut(t *testing.T) {
	a, b := &countingObserver{}, &countingObserver{}
	if MultiObserver(nil, nil) != nil {
		t.Fatal("MultiObserver of nothing must be nil (observing off)")
	}
	if MultiObserver(a, nil) != Observer(a) {
		t.Fatal("MultiObserver of one observer should be that observer")
	}
	e, st := observerState(t, MultiObserver(a, b))
	e.observeGuard(st, "g", "x")
	if a.events != 1 || b.events != 1 {
		t.Fatalf("events a=%d b=%d, want 1 each", a.events, b.events)
	}
}

// BenchmarkObserverOff is the per-event cost of the observation points
// with nothing attached (0 allocs/op), beside the same with an observer.
func BenchmarkObserverOff(b *testing.B) {
	for _, c := range []struct {
		name string
		obs  Observer
	}{{"off", nil}, {"on", &countingObserver{}}} {
		b.Run(c.name, func(b *testing.B) {
			e, st := observerState(b, c.obs)
			resp := &llm.Response{Model: "m", Usage: llm.Usage{InputTokens: 10, OutputTokens: 2, Reported: true}}
			res := &tool.Result{Content: "ok"}
			call := llm.ToolCall{ID: "c1", Name: "noop", Arguments: "{}"}
			b.ReportAllocs()
			for b.Loop() {
				emitAll(e, st, resp, res, call)
			}
		})
	}
}
