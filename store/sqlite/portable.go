package sqlite

import (
	"context"
	"database/sql"

	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// portable is sqlrows.Portable under an unexported name: Store embeds it
// for its methods without exporting a field.
type portable = sqlrows.Portable

// portableDB runs sqlrows.Portable's statements: writes on the writer,
// each in its own transaction, reads on the reader pool.
type portableDB struct{ s *Store }

func (d portableDB) Exec(ctx context.Context, op, query string, args ...any) (int64, error) {
	var n int64
	err := d.s.write(ctx, op, func(ctx context.Context, tx *wtx) (err error) {
		n, err = affected(tx.ExecContext(ctx, query, args...))
		return err
	})
	return n, err
}

func (d portableDB) Wrap(op string, err error) error { return d.s.wrap(op, err) }

func (d portableDB) Each(ctx context.Context, op string, row func(sqlrows.Scanner) error, query string, args ...any) error {
	if err := d.s.ready(op); err != nil {
		return err
	}
	return d.s.wrap(op, sqlrows.Each(func() (*sql.Rows, error) { return d.s.r.QueryContext(ctx, query, args...) }, row))
}
