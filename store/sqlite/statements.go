package sqlite

import (
	"context"
	"database/sql"

	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// statements are the hot-path read statements, prepared once per Store
// (the write ones live on the writer connection, see wtx).
type statements struct {
	load      *sql.Stmt // a session's rows in seq order (loadSQL)
	loadRange *sql.Stmt // the same up to a seq (loadRangeSQL)
}

// loadSQL and loadRangeSQL read a session's rows after a seq in seq order,
// up to a count or up to a seq; the parameters are the session, the seq
// after which to start, whether to include archived rows, and the bound.
const (
	loadSQL = `SELECT ` + loadCols + ` FROM messages
		WHERE session_id = ? AND seq > ? AND (? OR archived = 0) ORDER BY seq LIMIT ?`
	loadRangeSQL = `SELECT ` + loadCols + ` FROM messages
		WHERE session_id = ? AND seq > ? AND (? OR archived = 0) AND seq <= ? ORDER BY seq`
)

func (st *statements) prepare(ctx context.Context, r *sql.DB) error {
	var err error
	if st.load, err = r.PrepareContext(ctx, loadSQL); err != nil {
		return err
	}
	st.loadRange, err = r.PrepareContext(ctx, loadRangeSQL)
	return err
}

func (st *statements) close() {
	for _, stmt := range []*sql.Stmt{st.load, st.loadRange} {
		if stmt != nil {
			_ = stmt.Close() // fails only on a dead connection, which is closing anyway
		}
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
