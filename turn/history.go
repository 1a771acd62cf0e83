package turn

import (
	"context"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// loadHistory loads the session's live transcript and makes the user's
// message durable before any API call (invariant 1), unless the agent
// already did with the lease (Input.Stored).
func (e *Engine) loadHistory(ctx context.Context, st *state) verdict {
	dctx, cancel := durable(ctx)
	rows, err := e.cfg.Store.Messages(dctx, st.sessionID(), store.MessageQuery{})
	cancel()
	if err != nil {
		st.setExit(ExitPersistenceFailed, persistFailure("the session's history (loading it)", err))
		return finish
	}
	if len(st.in.Prefix) > 0 {
		rows = append(append(make([]store.Message, 0, len(st.in.Prefix)+len(rows)), st.in.Prefix...), rows...)
	}
	st.rows = rows
	e.stripScaffolding(ctx, st) // left by a turn that crashed before its finalizer
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
