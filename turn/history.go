package turn

import (
	"context"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// spareRows is the room the loaded rows leave for the rows a turn appends
// (its user message, each call's answer and tool results), so a long
// session's rows are not copied on the first append: ~80 KB against a
// copy of 16 MB at 50,000 rows.
const spareRows = 256

// loadHistory loads the session's live transcript and makes the user's
// message durable before any API call (invariant 1), unless the agent
// already did with the lease (Input.Stored).
func (e *Engine) loadHistory(ctx context.Context, st *state) verdict {
	dctx, cancel := durable(ctx)
	rows, err := e.cfg.Store.Messages(dctx, st.sessionID(), store.MessageQuery{Spare: spareRows})
	cancel()
	if err != nil {
		st.setExit(ExitPersistenceFailed, persistFailure("the session's history (loading it)", err))
		return finish
	}
	if len(st.in.Prefix) > 0 {
		rows = append(append(make([]store.Message, 0, len(st.in.Prefix)+len(rows)+spareRows), st.in.Prefix...), rows...)
	}
	st.rows = rows
	e.stripScaffolding(ctx, st) // left by a turn that crashed before its finalizer
	if st.in.Resume {
		return e.resume(ctx, st)
	}
	if st.in.Stored != nil {
		// Written with the lease (Input.Stored), so it is in rows already.
		return proceed
	}
	msg := st.in.Message
	msg.Role = llm.RoleUser
	user := &store.Message{Message: msg}
	if err := e.appendRows(ctx, st, user); err != nil {
		st.setExit(ExitPersistenceFailed, persistFailure("your message", err))
		return finish
	}
	return proceed
}
