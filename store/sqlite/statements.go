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

// collect returns a reader of a query's whole result with scan, which
// closes it: collect(scan)(db.Query(...)).
func collect[T any](scan func(sqlrows.Scanner) (T, error)) func(*sql.Rows, error) ([]T, error) {
	return func(rows *sql.Rows, err error) ([]T, error) {
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		return sqlrows.Collect(rows, scan)
	}
}
