package turn

import (
	"context"
	"errors"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// begin opens an iteration: it saves any cost no row carried, stops on an
// interrupt and spends the iteration budget, switching to the grace call
// when it is gone.
func (e *Engine) begin(ctx context.Context, st *state) verdict {
	// An answer that wrote no row (an empty one retried, a refusal that
	// falls back) has its cost on disk before the next call.
	e.flushUsage(ctx, st)
	if e.interrupted(ctx, st) {
		return finish
	}
	if !st.promptChecked {
		e.checkPrompt(ctx, st)
	}
	if e.haveIteration(st) {
		return proceed
	}
	if st.res.GraceCall {
		// The grace call already happened and still wanted more.
		st.setExit(ExitBudgetExhausted, nil)
		return finish
	}
	st.res.GraceCall = true
	e.guard(st, Guard{Guard: GuardIterationBudget, Action: "grace_call"})
	notice := &store.Message{
		Message:   llm.NewText(llm.RoleUser, BudgetNotice),
		Kind:      store.RowNotice,
		Synthetic: true,
	}
	if err := e.appendRows(ctx, st, notice); err != nil {
		st.setExit(ExitPersistenceFailed, persistFailure("the budget notice", err))
		return finish
	}
	return proceed
}

// interrupted reports whether the turn's context has ended, recording the
// exit: a lease taken over is lease_lost, anything else an interrupt.
func (e *Engine) interrupted(ctx context.Context, st *state) bool {
	if ctx.Err() == nil {
		return false
	}
	if errors.Is(context.Cause(ctx), ErrLeaseLost) {
		if st.res.Exit == "" {
			e.observeLeaseLost(st)
		}
		st.setExit(ExitLeaseLost, &Failure{
			Message: "Another process took over this session, so this turn stopped writing. Nothing it saved is lost.",
		})
	} else {
		st.setExit(ExitInterrupted, nil)
	}
	return true
}
