package turn

import (
	"context"
	"time"

	"github.com/talaria-agent/talaria/store"
)

// writeTimeout bounds one durable write. Writes use a context detached from
// the turn's, so a Ctrl+C never abandons a write halfway: what the user was
// shown is on disk before the turn returns. Lease loss is still enforced by
// the fence, not by the context.
const writeTimeout = 15 * time.Second

func durable(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
}

// appendRows writes rows durably under the turn's fence, with what the turn
// spent since the last such write (see unsaved), and mirrors them in
// st.rows. On error nothing is mirrored and the spend stays unsaved.
func (e *Engine) appendRows(ctx context.Context, st *state, rows ...*store.Message) error {
	for _, r := range rows {
		if r.TurnID == "" {
			r.TurnID = st.in.TurnID
		}
		if r.CreatedAt.IsZero() {
			r.CreatedAt = e.cfg.Now()
		}
	}
	sp, now := st.unsaved()
	dctx, cancel := durable(ctx)
	defer cancel()
	if err := e.cfg.Store.AppendSpend(dctx, st.live.fence, sp, rows...); err != nil {
		return err
	}
	st.saved = now
	for _, r := range rows {
		st.rows = append(st.rows, *r)
	}
	return nil
}

// deleteRows removes rows by ID from the store and from st.rows.
func (e *Engine) deleteRows(ctx context.Context, st *state, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	dctx, cancel := durable(ctx)
	defer cancel()
	if err := e.cfg.Store.Delete(dctx, st.live.fence, ids...); err != nil {
		return err
	}
	drop := make(map[int64]bool, len(ids))
	for _, id := range ids {
		drop[id] = true
	}
	kept := st.rows[:0]
	for _, r := range st.rows {
		if !drop[r.ID] {
			kept = append(kept, r)
		}
	}
	st.rows = kept
	return nil
}
