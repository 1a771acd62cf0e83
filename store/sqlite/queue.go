package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// Enqueue appends a message to its session's durable queue.
func (s *Store) Enqueue(ctx context.Context, q *store.QueuedMessage) error {
	const op = "enqueue"
	q.CreatedAt = sqlrows.OrNow(q.CreatedAt)
	q.StartedAt = time.Time{}
	return s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, q.SessionID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return s.notFound(op, "session "+q.SessionID)
		}
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO queue (session_id, turn_id, text, created_at) VALUES (?, ?, ?, ?)`,
			q.SessionID, q.TurnID, q.Text, sqlrows.Nanos(q.CreatedAt))
		if err != nil {
			return err
		}
		q.ID, err = res.LastInsertId()
		return err
	})
}

// Queued lists queued messages in FIFO order.
func (s *Store) Queued(ctx context.Context, sessionID string) ([]store.QueuedMessage, error) {
	q := `SELECT ` + sqlrows.QueueCols + ` FROM queue`
	var args []any
	if sessionID != "" {
		q += ` WHERE session_id = ?`
		args = append(args, sessionID)
	}
	return list(ctx, s, "list queue", sqlrows.ScanQueued, q+` ORDER BY id`, args...)
}
