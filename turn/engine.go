// Package turn runs one turn of a conversation as a phase machine.
//
// A turn is not "while the model returns tool calls". Each iteration passes
// the same phases, one file each: begin.go, prepare.go, assemble.go,
// preflight.go, retryloop.go, normalize.go, then toolround.go or
// finishtext.go. Every phase returns a verdict (verdict.go); the loop below
// is the only place that acts on verdicts, and every way out of it —
// completion, budget, failure, interrupt, lease loss, panic — passes through
// finalize.go. Per-turn mutable state lives in one struct (state.go) created
// at turn start; nothing leaks between turns. What an Engine is built from
// (Config, Limits, Route, defaults) is in config.go, a turn's Input in
// input.go and its Result in result.go.
package turn

import (
	"context"
	"log/slog"
	"runtime/debug"
)

// Engine runs turns. It is safe for concurrent use by turns of different
// sessions; the caller (agent) guarantees one turn per session at a time.
type Engine struct {
	cfg Config
	log *slog.Logger
}

// Run runs one turn and always returns its result. It never panics: a panic
// in a phase or a tool is recovered into ExitPanic, after the finalizer ran.
func (e *Engine) Run(ctx context.Context, in Input) Result {
	st := e.newState(in)
	res := e.run(ctx, st)
	// After the panic recovery in run, with the final result, on every way
	// out of the turn. The copy is made only when observing, so an
	// unobserved turn allocates nothing for it.
	if st.obs != nil {
		r := res
		e.endObserving(st, &r)
	}
	if st.hooks.Sink != nil {
		st.hooks.Sink(Finished{Result: res})
	}
	return res
}

// run is Run's body: it recovers a panic into ExitPanic after the finalizer
// ran.
func (e *Engine) run(ctx context.Context, st *state) (res Result) {
	defer func() {
		if p := recover(); p != nil {
			e.log.Error("turn panicked", "session", st.sessionID(), "turn", st.in.TurnID,
				"panic", p, "stack", string(debug.Stack()))
			st.setExit(ExitPanic, PanicFailure(p))
			res = e.finalizeSafely(ctx, st)
		}
	}()
	e.startObserving(ctx, st)
	if v := e.loadHistory(ctx, st); v == finish {
		return e.finalize(ctx, st)
	}
	e.loop(ctx, st)
	return e.finalize(ctx, st)
}

// loop is the iteration loop; it only reads verdicts.
func (e *Engine) loop(ctx context.Context, st *state) {
	for {
		if e.begin(ctx, st) == finish {
			return
		}
		e.prepare(ctx, st)
		e.assemble(st)
		switch e.preflight(ctx, st) {
		case restart:
			continue
		case finish:
			return
		}
		resp, v := e.retryLoop(ctx, st)
		switch v {
		case restart:
			continue
		case finish:
			return
		}
		switch e.normalize(ctx, st, resp) {
		case restart, next:
			continue
		case finish:
			return
		}
		if len(resp.Message.ToolCalls) > 0 && !st.res.GraceCall {
			v = e.toolRound(ctx, st, resp)
		} else {
			v = e.finishText(ctx, st, resp)
		}
		if v == finish {
			return
		}
	}
}

// finalizeSafely runs the finalizer after a panic; a second panic there
// still yields a result.
func (e *Engine) finalizeSafely(ctx context.Context, st *state) (res Result) {
	defer func() {
		if p := recover(); p != nil {
			e.log.Error("finalizer panicked", "panic", p, "stack", string(debug.Stack()))
			res = st.res
			res.SessionID = st.sessionID()
			res.Fail(ExitPanic, PanicFailure(p))
		}
	}()
	return e.finalize(ctx, st)
}
