// Package sqlrows is what store/sqlite and store/postgres share: how rows
// are encoded and decoded (the column lists and their order, the compact
// content encoding, times as unix nanoseconds), reading a result set, the
// error causes common to both drivers, and the statements both databases
// read alike. Those are written once here, with ? placeholders that
// PostgreSQL numbers once, together with the store methods around them
// where those are alike too (Portable), so the backends cannot drift
// apart. Statements whose dialects differ (RETURNING against a last
// insert id, casts, full-text search, locking and transactions) stay in
// each backend.
//
// The helpers take the drivers' rows through small interfaces that both
// database/sql and pgx satisfy, so nothing here imports a driver.
package sqlrows

import (
	"time"
)

// Scanner is one result row: *sql.Row, *sql.Rows, pgx.Row or pgx.Rows.
type Scanner interface{ Scan(dest ...any) error }

// Rows is a result set being read: *sql.Rows or pgx.Rows.
type Rows interface {
	Scanner
	Next() bool
	Err() error
}

// Each runs query, a driver's query call, and calls row on every row it
// returns.
func Each[R Rows](query func() (R, error), row func(Scanner) error) error {
	rows, err := query()
	if err != nil {
		return err
	}
	defer closeRows(rows)
	for rows.Next() {
		if err := row(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// closeRows closes a result set. The drivers' Close methods differ: pgx's
// returns nothing, and database/sql's error after reading is one Err has
// reported already.
func closeRows(rows Rows) {
	switch r := rows.(type) {
	case interface{ Close() }:
		r.Close()
	case interface{ Close() error }:
		_ = r.Close()
	}
}

// Nanos stores a time as UTC unix nanoseconds; the zero time is 0.
func Nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// FromNanos reverses Nanos.
func FromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// NullNanos is a nullable time column's value: nil (NULL) for the zero time.
func NullNanos(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	n := t.UnixNano()
	return &n
}

// fromNullNanos reverses NullNanos.
func fromNullNanos(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return FromNanos(*n)
}

// OrNow is t, or Now for the zero time: a row's time the caller may leave
// for the store to set.
func OrNow(t time.Time) time.Time {
	if t.IsZero() {
		return Now()
	}
	return t
}

// Now is the stores' clock for rows: UTC without a monotonic reading, so a
// value set by a store compares equal to the one read back.
func Now() time.Time { return time.Now().UTC().Round(0) }
