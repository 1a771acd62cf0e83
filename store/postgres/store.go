// Package postgres is Talaria's store for several nodes on one database:
// PostgreSQL through pgx (pgxpool), holding the same sessions, messages,
// turn leases and credential cooldowns as store/sqlite and passing the same
// contract suite (store/storetest).
//
// Every fenced write checks its lease in the same transaction that writes:
// the lease row is locked FOR SHARE by the write and FOR UPDATE by a
// takeover, so a write either commits before a takeover or is refused after
// it, on whichever node it runs. Lease times come from the database's clock,
// so nodes need not agree on the time.
//
// The schema lives in the connection's current schema (set search_path in
// the URL to keep several installations in one database) and is migrated on
// Open under an advisory lock, so nodes starting together do not race.
package postgres

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

var _ store.Store = (*Store)(nil)

// Options tunes a Store; the zero value is the recommended setting.
type Options struct {
	// MaxConns caps the pool; 0 keeps pgx's default (or pool_max_conns in
	// the URL).
	MaxConns int32
	// Logger receives migration messages; nil discards them.
	Logger *slog.Logger
}

// Store is a store.Store on a PostgreSQL database. It is safe for
// concurrent use, and any number of processes may share the database.
type Store struct {
	portable // the methods whose SQL SQLite shares
	pool     *pgxpool.Pool
	name     string // the DSN without its password, for error messages
	log      *slog.Logger
	closed   atomic.Bool
}

// IsURL reports whether s names a PostgreSQL database (postgres:// or
// postgresql://).
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Open connects to the database at dsn (a postgres:// URL or key=value
// string) and brings its schema up to date. Errors are *store.Error values
// whose Kind says what a person can do (KindUnavailable when the server
// cannot be reached).
func Open(ctx context.Context, dsn string, opt Options) (*Store, error) {
	s := &Store{name: Redact(dsn), log: opt.Logger}
	s.portable = sqlrows.NewPortable(portableDB{s}, s.name, rebind)
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx quotes the whole DSN in its parse errors; say only what is wrong.
		return nil, &store.Error{Op: "open", Kind: store.KindOther, Path: s.name,
			Err: errors.New("invalid PostgreSQL URL")}
	}
	if opt.MaxConns > 0 {
		cfg.MaxConns = opt.MaxConns
	}
	// Statements are prepared per connection and cached (pgx's default),
	// so the hot ones cost one round trip each.
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, s.wrap("open", err)
	}
	from, to, err := migrate(ctx, s.pool)
	if err != nil {
		s.pool.Close()
		return nil, s.wrap("open", err)
	}
	if from != to {
		s.log.Info("store schema migrated", "database", s.name, "from", from, "to", to)
	}
	return s, nil
}

// Name is the database's DSN without its password.
func (s *Store) Name() string { return s.name }

// Close closes the pool. Calls after Close fail with store.KindClosed;
// closing twice is not an error.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.pool.Close()
	return nil
}

// errClosed is reported for any call after Close.
var errClosed = sqlrows.ErrClosed

func (s *Store) ready(op string) error {
	if s.closed.Load() {
		return s.wrap(op, errClosed)
	}
	return nil
}

func (s *Store) notFound(op, what string) error {
	return sqlrows.NotFound(op, s.name, what)
}

// tx runs fn in one read-committed transaction. Row locks taken inside fn
// (see admit) give the ordering the contract needs.
func (s *Store) tx(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	if err := s.ready(op); err != nil {
		return err
	}
	return s.wrap(op, pgx.BeginFunc(ctx, s.pool, fn))
}

// exec runs one statement for op.
func (s *Store) exec(ctx context.Context, op, query string, args ...any) error {
	_, err := s.execN(ctx, op, query, args...)
	return err
}

// execOne runs one statement that must touch a row; what names the row in
// the not-found error.
func (s *Store) execOne(ctx context.Context, op, what, query string, args ...any) error {
	n, err := s.execN(ctx, op, query, args...)
	if err == nil && n == 0 {
		return s.notFound(op, what)
	}
	return err
}

// execN runs one statement for op and reports how many rows it touched.
func (s *Store) execN(ctx context.Context, op, query string, args ...any) (int64, error) {
	if err := s.ready(op); err != nil {
		return 0, err
	}
	tag, err := s.pool.Exec(ctx, query, args...)
	if err != nil {
		return 0, s.wrap(op, err)
	}
	return tag.RowsAffected(), nil
}

// retryRead runs a read again, once, when it failed because its
// connection was gone (the server restarted, or connections were killed):
// the pool has dropped that connection, and a read is safe to repeat. So
// the first turn after the database comes back loads its session instead
// of failing on a stale connection.
func (s *Store) retryRead(ctx context.Context, fn func() error) error {
	err := fn()
	if err != nil && kindOf(err) == store.KindUnavailable && ctx.Err() == nil && !s.closed.Load() {
		err = fn()
	}
	return err
}

// Redact returns dsn without its password, for messages and logs.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		// Unparsable or key=value: show it only when it cannot hold a
		// password.
		if strings.Contains(dsn, "password") || strings.Contains(dsn, "@") {
			return "(PostgreSQL connection string)"
		}
		return dsn
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// dbNow is the database clock in unix nanoseconds (microsecond resolution),
// used for leases so every node measures expiry on the same clock.
const dbNow = `(extract(epoch from clock_timestamp()) * 1000000)::bigint * 1000`

// list reads every row query returns with scan.
func list[T any](ctx context.Context, s *Store, op string, scan func(sqlrows.Scanner) (T, error),
	query string, args ...any) ([]T, error) {
	return sqlrows.List(ctx, portableDB{s}, op, scan, query, args...)
}

// get reads the one row query returns with scan, again once on a lost
// connection (see retryRead); no row is what, not found.
func get[T any](ctx context.Context, s *Store, op, what string, scan func(sqlrows.Scanner) (T, error),
	query string, args ...any) (*T, error) {
	if err := s.ready(op); err != nil {
		return nil, err
	}
	var v T
	err := s.retryRead(ctx, func() (err error) {
		v, err = scan(s.pool.QueryRow(ctx, query, args...))
		return err
	})
	if err != nil {
		return nil, s.lookup(op, what, err)
	}
	return &v, nil
}
