package sqlite

import (
	"context"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// AppendTurnEvents stores a turn's events in one transaction.
func (s *Store) AppendTurnEvents(ctx context.Context, evs ...store.TurnEvent) error {
	const op = "append turn events"
	if len(evs) == 0 {
		return s.ready(op)
	}
	return s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		checked := map[string]bool{}
		for _, e := range evs {
			if !checked[e.SessionID] {
				var one int
				if err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, e.SessionID).Scan(&one); err != nil {
					return s.notFound(op, "session "+e.SessionID)
				}
				checked[e.SessionID] = true
			}
			if _, err := tx.ExecContext(ctx, sqlrows.TurnEventSQL, sqlrows.TurnEventArgs(new([9]any), &e)...); err != nil {
				return err
			}
		}
		return nil
	})
}
