package postgres

import (
	"context"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// memoryWhere selects a MemoryQuery's entries: the workspace's shared
// entries, plus the user's own when a user is named.
const memoryWhere = `workspace = $1 AND (user_name = '' OR user_name = $2)`

// AddMemory stores e, assigning its ID and, when zero, its CreatedAt.
func (s *Store) AddMemory(ctx context.Context, e *store.MemoryEntry) error {
	const op = "add memory"
	if err := s.ready(op); err != nil {
		return err
	}
	created := sqlrows.OrNow(e.CreatedAt)
	var id int64
	err := s.pool.QueryRow(ctx, `INSERT INTO memory (workspace, user_name, text, source_session, created_at)
		VALUES ($1, $2, $3, $4, $5) RETURNING id`, e.Workspace, e.User, []byte(e.Text), e.SourceSession,
		sqlrows.Nanos(created)).Scan(&id)
	if err != nil {
		return s.wrap(op, err)
	}
	e.ID, e.CreatedAt = id, created
	return nil
}

// Memories lists the entries q selects, oldest first.
func (s *Store) Memories(ctx context.Context, q store.MemoryQuery) ([]store.MemoryEntry, error) {
	var out []store.MemoryEntry
	err := s.retryRead(ctx, func() (err error) {
		out, err = list(ctx, s, "memories", sqlrows.ScanMemory, `SELECT `+sqlrows.MemoryCols+`
			FROM memory WHERE `+memoryWhere+` ORDER BY id`, q.Workspace, q.User)
		return err
	})
	return out, err
}
