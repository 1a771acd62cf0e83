package turn

import (
	"context"
	"fmt"
	"strings"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/transcript"
)

// finalize closes every turn, whatever ended it: it retries a final answer
// whose early flush failed, strips this turn's scaffolding (nudges,
// notices), closes a failed turn with a display-only row so the user's
// message does not dangle, adds usage to the session, explains the ending
// and builds the result.
func (e *Engine) finalize(ctx context.Context, st *state) Result {
	st.releaseIteration()
	if st.res.Exit == "" {
		st.setExit(ExitCompleted, nil)
	}
	if st.pendingFinal != nil && st.res.Exit != ExitLeaseLost {
		var err error
		for try := 0; try < 3; try++ {
			if err = e.appendRows(ctx, st, st.pendingFinal); err == nil {
				st.pendingFinal = nil
				break
			}
		}
		if err != nil {
			e.log.Error("final answer could not be saved", "session", st.sessionID(), "error", err)
			st.res.Fail(ExitPersistenceFailed, persistFailure("the final answer (it is shown above and returned in the result)", err))
		}
	}
	if st.res.Exit != ExitLeaseLost {
		e.stripScaffolding(ctx, st)
		e.savePressure(ctx, st)
		if st.res.Failure != nil && st.res.Exit != ExitPersistenceFailed {
			e.closeFailedTurn(ctx, st)
		}
	}
	e.flushUsage(ctx, st)

	// The tally is already in st.res; what is left is derived from it.
	r := &st.res
	r.SessionID = st.sessionID()
	r.FinalText = transcript.CleanText(r.FinalText)
	r.CostKnown = r.CostKnown && r.APICalls > 0
	r.Pricing = pricing(st)
	r.Provider = e.route(st).Provider.Name()
	r.Model = e.route(st).Model
	r.Explanation = e.explain(st)
	r.Duration = e.cfg.Now().Sub(st.start)
	return *r
}

// stripScaffolding removes the nudges and notices in the live transcript:
// they steered the model during their turn and must not be replayed as user
// turns later. Besides this turn's, it takes those a crashed or killed turn
// left behind (loadHistory calls it before the user's message is written).
func (e *Engine) stripScaffolding(ctx context.Context, st *state) {
	var ids []int64
	for _, r := range st.rows {
		// Prefix rows (another session's) are read-only here.
		if isScaffolding(&r) && r.SessionID == st.sessionID() {
			ids = append(ids, r.ID)
		}
	}
	if err := e.deleteRows(ctx, st, ids); err != nil {
		e.log.Warn("could not strip turn scaffolding", "session", st.sessionID(), "error", err)
	}
}

// isScaffolding reports an engine-written user-role nudge or notice.
// Synthetic assistant rows (pieces of a continued answer, failure rows) are
// not scaffolding: they hold what the user was shown.
func isScaffolding(r *store.Message) bool {
	return r.Synthetic && r.Role == llm.RoleUser && (r.Kind == store.RowNudge || r.Kind == store.RowNotice)
}

// closeFailedTurn appends a display-only assistant row that says why the
// turn failed. It is shown in the session, never sent to a model.
func (e *Engine) closeFailedTurn(ctx context.Context, st *state) {
	row := &store.Message{
		Message:   llm.NewText(llm.RoleAssistant, "Turn failed: "+st.res.Failure.Message),
		Kind:      store.RowFailure,
		Synthetic: true,
		Provider:  st.res.Failure.Provider,
		Model:     st.res.Failure.Model,
	}
	if err := e.appendRows(ctx, st, row); err != nil {
		e.log.Warn("could not write the failed-turn row", "session", st.sessionID(), "error", err)
	}
}

// explain says in plain words why a turn ended as it did.
func (e *Engine) explain(st *state) string {
	var parts []string
	if st.explanation != "" {
		parts = append(parts, st.explanation)
	}
	switch st.res.Exit {
	case ExitBudgetExhausted:
		parts = append(parts, fmt.Sprintf(
			"The turn used its %d model calls (max_iterations) and then one last call without tools to sum up. Send another message (for example \"continue\") to go on, or raise max_iterations.",
			e.cfg.Limits.MaxIterations))
	case ExitInterrupted:
		parts = append(parts, "The turn was interrupted. Everything shown so far is saved; unfinished tool calls are marked as interrupted. Send a message to continue.")
	}
	if st.res.Failure != nil && st.res.Failure.Message != "" {
		parts = append(parts, st.res.Failure.Message)
	}
	return strings.Join(parts, " ")
}
