package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// portable is sqlrows.Portable under an unexported name: Store embeds it
// for its methods without exporting a field.
type portable = sqlrows.Portable

// portableDB runs sqlrows.Portable's statements on the pool.
type portableDB struct{ s *Store }

func (d portableDB) Exec(ctx context.Context, op, query string, args ...any) (int64, error) {
	return d.s.execN(ctx, op, query, args...)
}

func (d portableDB) Wrap(op string, err error) error { return d.s.wrap(op, err) }

func (d portableDB) Each(ctx context.Context, op string, row func(sqlrows.Scanner) error, query string, args ...any) error {
	if err := d.s.ready(op); err != nil {
		return err
	}
	return d.s.wrap(op, sqlrows.Each(func() (pgx.Rows, error) { return d.s.pool.Query(ctx, query, args...) }, row))
}

// The statements sqlrows shares for this backend's own code (mostly its
// transactions), numbered once.
var (
	setPromptSQL    = rebind(sqlrows.SetPromptSQL)
	addUsageSQL     = rebind(sqlrows.AddUsageSQL)
	sessionStateSQL = rebind(sqlrows.SessionStateSQL)
	leaseStateSQL   = rebind(sqlrows.LeaseStateSQL)
	leaseSQL        = rebind(sqlrows.LeaseSQL)
	turnEventSQL    = rebind(sqlrows.TurnEventSQL)
)

// rebind numbers a shared statement's ? placeholders $1, $2, … (none of
// them stands in a string literal): once per statement, at init above and
// for the Portable table at Open, never per call.
func rebind(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r != '?' {
			b.WriteRune(r)
			continue
		}
		n++
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}
