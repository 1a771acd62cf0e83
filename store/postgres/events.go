package postgres

import (
	"context"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// AppendTurnEvents stores a turn's events in one transaction (unfenced:
// display-only records).
func (s *Store) AppendTurnEvents(ctx context.Context, evs ...store.TurnEvent) error {
	const op = "append turn events"
	if err := s.ready(op); err != nil || len(evs) == 0 {
		return err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.wrap(op, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, e := range evs {
		_, err := tx.Exec(ctx, turnEventSQL, sqlrows.TurnEventArgs(new([9]any), &e)...)
		if err != nil {
			return s.sessionWrite(op, e.SessionID, err)
		}
	}
	return s.wrap(op, tx.Commit(ctx))
}
