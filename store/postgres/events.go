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
		_, err := tx.Exec(ctx, `INSERT INTO turn_events
			(session_id, turn_id, seq, kind, name, started_at, duration_ns, cost_usd, detail)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			e.SessionID, e.TurnID, e.Seq, e.Kind, e.Name, sqlrows.Nanos(e.Start), int64(e.Duration), e.CostUSD, e.Detail)
		if err != nil {
			return s.sessionWrite(op, e.SessionID, err)
		}
	}
	return s.wrap(op, tx.Commit(ctx))
}
