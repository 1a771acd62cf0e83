package sqlite

import (
	"context"
	"database/sql"

	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// statements are the hot-path read statements, prepared once per Store
// (the write ones live on the writer connection, see wtx).
type statements struct {
	load *sql.Stmt // a session's rows in seq order
}

func (st *statements) prepare(ctx context.Context, r *sql.DB) error {
	var err error
	st.load, err = r.PrepareContext(ctx, `SELECT `+loadCols+` FROM messages
		WHERE session_id = ? AND seq > ? AND (? OR archived = 0) ORDER BY seq LIMIT ?`)
	return err
}

func (st *statements) close() {
	if st.load != nil {
		_ = st.load.Close() // fails only on a dead connection, which is closing anyway
	}
}

// list reads every row query returns with scan, on the reader pool.
func list[T any](ctx context.Context, s *Store, op string, scan func(sqlrows.Scanner) (T, error),
	query string, args ...any) ([]T, error) {
	return sqlrows.List(ctx, portableDB{s}, op, scan, query, args...)
}

// get reads the one row query returns with scan, on db; no row is what,
// not found.
func get[T any](ctx context.Context, s *Store, db *sql.DB, op, what string, scan func(sqlrows.Scanner) (T, error),
	query string, args ...any) (*T, error) {
	if err := s.ready(op); err != nil {
		return nil, err
	}
	v, err := scan(db.QueryRowContext(ctx, query, args...))
	if err != nil {
		return nil, s.lookup(op, what, err)
	}
	return &v, nil
}
