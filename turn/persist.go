package turn

import (
	"context"
	"errors"
	"fmt"
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

// appendRows writes rows durably under the turn's fence and mirrors them in
// st.rows. On error nothing is mirrored.
func (e *Engine) appendRows(ctx context.Context, st *state, rows ...*store.Message) error {
	for _, r := range rows {
		if r.TurnID == "" {
			r.TurnID = st.in.TurnID
		}
		if r.CreatedAt.IsZero() {
			r.CreatedAt = e.cfg.Now()
		}
	}
	dctx, cancel := durable(ctx)
	defer cancel()
	if err := e.cfg.Store.Append(dctx, st.in.Fence, rows...); err != nil {
		return err
	}
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
	if err := e.cfg.Store.Delete(dctx, st.in.Fence, ids...); err != nil {
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

// persistFailure describes a failed durable write by its real cause.
func persistFailure(what string, err error) *Failure {
	kind := store.KindOf(err)
	f := &Failure{Reason: "persistence:" + string(kind), Detail: err.Error()}
	// Name the file: "locked" or "damaged" is only actionable with it.
	db := "the database"
	var se *store.Error
	if errors.As(err, &se) && se.Path != "" {
		db += " " + se.Path
	}
	switch kind {
	case store.KindLeaseLost:
		f.Message = fmt.Sprintf("Could not save %s: another process took over this session's turn, so this one stopped.", what)
	case store.KindLocked:
		f.Retryable = true
		f.Message = fmt.Sprintf("Could not save %s: %s is locked by another process. Wait for it to finish (or stop it) and retry.", what, db)
	case store.KindDiskFull:
		f.Retryable = true
		f.Message = fmt.Sprintf("Could not save %s: the disk holding %s is full. Free some space and retry.", what, db)
	case store.KindReadOnly:
		f.Message = fmt.Sprintf("Could not save %s: %s is read-only. Check the file's permissions.", what, db)
	case store.KindCorrupt:
		f.Message = fmt.Sprintf("Could not save %s: %s is damaged. Move it aside to start fresh.", what, db)
	case store.KindUnavailable:
		f.Retryable = true
		server, cause := "", err.Error()
		if se != nil && se.Err != nil {
			server, cause = " "+se.Path, se.Err.Error()
		}
		f.Message = fmt.Sprintf("Could not save %s: the database server%s cannot be reached (%s). This turn stopped writing; retry once the server is back (no restart needed).", what, server, cause)
	case store.KindEnded:
		f.Message = fmt.Sprintf("Could not save %s: the session was closed (it may have been continued in a new session after compression); resume the newest session.", what)
	default:
		f.Message = fmt.Sprintf("Could not save %s: %v", what, err)
	}
	return f
}
