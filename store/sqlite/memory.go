package sqlite

import (
	"context"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// memoryWhere selects a MemoryQuery's entries: the workspace's shared
// entries, plus the user's own when a user is named.
const memoryWhere = `workspace = ? AND (user_name = '' OR user_name = ?)`

// AddMemory stores e, assigning its ID and, when zero, its CreatedAt.
func (s *Store) AddMemory(ctx context.Context, e *store.MemoryEntry) error {
	const op = "add memory"
	e.CreatedAt = sqlrows.OrNow(e.CreatedAt)
	return s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO memory (workspace, user_name, text, source_session, created_at)
			VALUES (?, ?, ?, ?, ?)`, e.Workspace, e.User, e.Text, e.SourceSession, sqlrows.Nanos(e.CreatedAt))
		if err != nil {
			return err
		}
		e.ID, err = res.LastInsertId()
		return err
	})
}

// Memories lists the entries q selects, oldest first.
func (s *Store) Memories(ctx context.Context, q store.MemoryQuery) ([]store.MemoryEntry, error) {
	return list(ctx, s, "memories", sqlrows.ScanMemory, `SELECT `+sqlrows.MemoryCols+`
		FROM memory WHERE `+memoryWhere+` ORDER BY id`, q.Workspace, q.User)
}
