package sqlite

import (
	"context"
	"strconv"

	"github.com/talaria-agent/talaria/store"
)

// memoryWhere selects a MemoryQuery's entries: the workspace's shared
// entries, plus the user's own when a user is named.
const memoryWhere = `workspace = ? AND (user_name = '' OR user_name = ?)`

// AddMemory stores e, assigning its ID and, when zero, its CreatedAt.
func (s *Store) AddMemory(ctx context.Context, e *store.MemoryEntry) error {
	const op = "add memory"
	if e.CreatedAt.IsZero() {
		e.CreatedAt = now()
	}
	return s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO memory (workspace, user_name, text, source_session, created_at)
			VALUES (?, ?, ?, ?, ?)`, e.Workspace, e.User, e.Text, e.SourceSession, nanos(e.CreatedAt))
		if err != nil {
			return err
		}
		e.ID, err = res.LastInsertId()
		return err
	})
}

// Memories lists the entries q selects, oldest first.
func (s *Store) Memories(ctx context.Context, q store.MemoryQuery) ([]store.MemoryEntry, error) {
	const op = "memories"
	if err := s.ready(op); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, workspace, user_name, text, source_session, created_at
		FROM memory WHERE `+memoryWhere+` ORDER BY id`, q.Workspace, q.User)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	defer rows.Close()
	var out []store.MemoryEntry
	for rows.Next() {
		var (
			e  store.MemoryEntry
			at int64
		)
		if err := rows.Scan(&e.ID, &e.Workspace, &e.User, &e.Text, &e.SourceSession, &at); err != nil {
			return nil, s.wrap(op, err)
		}
		e.CreatedAt = fromNanos(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(op, err)
	}
	return out, nil
}

// DeleteMemory removes entry id of workspace.
func (s *Store) DeleteMemory(ctx context.Context, workspace string, id int64) error {
	const op = "delete memory"
	return s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM memory WHERE id = ? AND workspace = ?`, id, workspace)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return s.notFound(op, "memory entry "+strconv.FormatInt(id, 10))
		}
		return nil
	})
}

// ClearMemory removes the entries q selects.
func (s *Store) ClearMemory(ctx context.Context, q store.MemoryQuery) (int64, error) {
	const op = "clear memory"
	var n int64
	err := s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM memory WHERE `+memoryWhere, q.Workspace, q.User)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}
