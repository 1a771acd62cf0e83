package postgres

import (
	"context"
	"time"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// Enqueue appends a message to its session's durable queue, shared by
// every node on the database.
func (s *Store) Enqueue(ctx context.Context, q *store.QueuedMessage) error {
	const op = "enqueue"
	if err := s.ready(op); err != nil {
		return err
	}
	created := sqlrows.OrNow(q.CreatedAt)
	var id int64
	err := s.pool.QueryRow(ctx, `INSERT INTO queue (session_id, turn_id, text, created_at)
		VALUES ($1, $2, $3, $4) RETURNING id`, q.SessionID, q.TurnID, []byte(q.Text), sqlrows.Nanos(created)).Scan(&id)
	if err != nil {
		return s.sessionWrite(op, q.SessionID, err)
	}
	q.ID, q.CreatedAt, q.StartedAt = id, created, time.Time{}
	return nil
}

// Queued lists queued messages in FIFO order; sessionID "" lists all.
func (s *Store) Queued(ctx context.Context, sessionID string) ([]store.QueuedMessage, error) {
	var out []store.QueuedMessage
	err := s.retryRead(ctx, func() (err error) {
		out, err = list(ctx, s, "list queue", sqlrows.ScanQueued, `SELECT `+sqlrows.QueueCols+` FROM queue
			WHERE $1 = '' OR session_id = $1 ORDER BY id`, sessionID)
		return err
	})
	return out, err
}
