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
	if st.exit == "" {
		st.setExit(ExitCompleted, nil)
	}
	if st.pendingFinal != nil && st.exit != ExitLeaseLost {
		var err error
		for try := 0; try < 3; try++ {
			if err = e.appendRows(ctx, st, st.pendingFinal); err == nil {
				st.pendingFinal = nil
				break
			}
		}
		if err != nil {
			e.log.Error("final answer could not be saved", "session", st.in.Session.ID, "error", err)
			st.exit = ExitPersistenceFailed
			st.failure = persistFailure("the final answer (it is shown above and returned in the result)", err)
		}
	}
	if st.exit != ExitLeaseLost {
		e.stripScaffolding(ctx, st)
		if st.failure != nil && st.exit != ExitPersistenceFailed {
			e.closeFailedTurn(ctx, st)
		}
	}
	e.flushUsage(ctx, st)

	r := &st.result
	r.Exit = st.exit
	r.FinalText = transcript.CleanText(st.finalText)
	r.Truncated = st.truncated
	r.APICalls = st.apiCalls
	r.Iterations = st.iterations
	r.ToolRounds = st.toolRounds
	r.ToolCalls = st.toolCalls
	r.GraceCall = st.graceCall
	r.Usage = st.usage
	r.CostUSD = st.costUSD
	r.CostKnown = st.costKnown && st.apiCalls > 0
	r.Pricing = pricing(st)
	r.Compactions = st.compactions
	r.Provider = e.route(st).Provider.Name()
	r.Model = e.route(st).Model
	r.Routes = st.routes
	r.Failure = st.failure
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
		if isScaffolding(&r) && r.SessionID == st.in.Session.ID {
			ids = append(ids, r.ID)
		}
	}
	if err := e.deleteRows(ctx, st, ids); err != nil {
		e.log.Warn("could not strip turn scaffolding", "session", st.in.Session.ID, "error", err)
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
		Message:   llm.NewText(llm.RoleAssistant, "Turn failed: "+st.failure.Message),
		Kind:      store.RowFailure,
		Synthetic: true,
		Provider:  st.failure.Provider,
		Model:     st.failure.Model,
	}
	if err := e.appendRows(ctx, st, row); err != nil {
		e.log.Warn("could not write the failed-turn row", "session", st.in.Session.ID, "error", err)
	}
}

// explain says in plain words why a turn ended as it did.
func (e *Engine) explain(st *state) string {
	var parts []string
	if st.explanation != "" {
		parts = append(parts, st.explanation)
	}
	switch st.exit {
	case ExitBudgetExhausted:
		parts = append(parts, fmt.Sprintf(
			"The turn used its %d model calls (max_iterations) and then one last call without tools to sum up. Send another message (for example \"continue\") to go on, or raise max_iterations.",
			e.cfg.MaxIterations))
	case ExitInterrupted:
		parts = append(parts, "The turn was interrupted. Everything shown so far is saved; unfinished tool calls are marked as interrupted. Send a message to continue.")
	}
	if st.failure != nil && st.failure.Message != "" {
		parts = append(parts, st.failure.Message)
	}
	return strings.Join(parts, " ")
}
