// Package sqlite is Talaria's embedded default store: one SQLite file in WAL
// mode (modernc.org/sqlite, pure Go), holding sessions, messages with a
// full-text index, turn leases and credential cooldowns.
//
// All writes of one Store go through a single connection (SQLite allows one
// writer at a time anyway), each in a BEGIN IMMEDIATE transaction, so fence
// checks and seq assignment see a stable database. Reads use a separate pool
// and, thanks to WAL, never wait for writers. Several processes may open the
// same file; they wait for each other's writes up to Options.BusyTimeout.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

var _ store.Store = (*Store)(nil)

// Synchronous modes accepted by Options.Synchronous.
const (
	// SyncNormal (the default) keeps every committed row across a process
	// crash (kill -9); a power loss may lose the last commits.
	SyncNormal = "normal"
	// SyncFull also survives power loss, at a few fsyncs per commit.
	SyncFull = "full"
)

// DefaultBusyTimeout is how long a write waits for another process's write
// transaction before failing with store.KindLocked.
const DefaultBusyTimeout = 5 * time.Second

// Options tunes a Store; the zero value is the recommended setting.
type Options struct {
	// Synchronous: "normal" (default; WAL + synchronous=NORMAL survives any
	// process crash, tens of µs a commit) or "full" (power-loss safety,
	// ~0.5 ms a commit).
	Synchronous string
	// BusyTimeout is how long to wait for another process's write lock;
	// 0 means DefaultBusyTimeout.
	BusyTimeout time.Duration
	// Logger receives migration and maintenance messages; nil discards them.
	Logger *slog.Logger
	// ReadOnly opens an existing database for reading only: no file is
	// created, no migration runs and no lock is taken, so listing and
	// showing sessions work on a read-only file or while another process
	// holds the write lock. Writes fail with store.KindReadOnly; a schema
	// older than this build's is an *OldSchemaError (open it writable once).
	ReadOnly bool
}

// Store is a store.Store backed by one SQLite file. It is safe for
// concurrent use by many goroutines, and several processes may use the same
// file at once.
type Store struct {
	portable // the methods whose SQL PostgreSQL shares
	path     string
	w        *sql.DB // a pool of one connection, held by wc between writes
	r        *sql.DB // readers; WAL lets them run beside the writer
	// tok is a reader of its own for token lookups: a flood of slow
	// queries on r (searches) never holds up authentication.
	tok    *sql.DB
	log    *slog.Logger
	closed atomic.Bool
	st     statements
	// wmu (a one-slot semaphore, so waiting honours ctx) serialises writes
	// and guards wc, the writer connection.
	wmu chan struct{}
	wc  *wtx
	// newID draws session ids (nil: store.NewID); tests force collisions.
	newID func(time.Time) string
	// readOnly: opened with Options.ReadOnly; w is nil.
	readOnly bool
	busy     time.Duration // how long a write waits for another process's lock
	// cp runs WAL checkpoints off the commit path (nil when read-only).
	cp *checkpointer
	// ftsUpto caches fts_state.indexed_upto to decide cheaply when an
	// append should index the backlog; the table is the truth.
	ftsUpto atomic.Int64
}

// Open opens (creating when missing) the database at path, creating its
// parent directory with mode 0700 and the file with mode 0600, and brings the
// schema up to date. Errors are *store.Error values whose Kind says what a
// person can do (for example KindCorrupt when path is not a database).
func Open(ctx context.Context, path string, opt Options) (*Store, error) {
	if path == "" {
		return nil, &store.Error{Op: "open", Kind: store.KindOther, Err: errors.New("empty database path")}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &store.Error{Op: "open", Kind: store.KindOther, Path: path, Err: err}
	}
	syncMode, err := syncPragma(opt.Synchronous)
	if err != nil {
		return nil, &store.Error{Op: "open", Kind: store.KindOther, Path: abs, Err: err}
	}
	busy := opt.BusyTimeout
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{path: abs, log: log, wmu: make(chan struct{}, 1), busy: busy}
	s.portable = sqlrows.NewPortable(portableDB{s}, abs, nil)
	if opt.ReadOnly {
		return s.openReadOnly(ctx)
	}

	if err := prepareFile(abs); err != nil {
		return nil, s.wrap("open", err)
	}

	busyMS := fmt.Sprint(busy.Milliseconds())
	s.w, err = sql.Open("sqlite", dsn(abs,
		"_pragma", "busy_timeout("+busyMS+")",
		"_pragma", "journal_mode(WAL)",
		"_pragma", "synchronous("+syncMode+")",
		"_pragma", "foreign_keys(1)",
		"_txlock", "immediate", // for the migration; writes issue BEGIN IMMEDIATE themselves
	))
	if err != nil {
		return nil, s.wrap("open", err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxIdleTime(0)
	s.w.SetConnMaxLifetime(0)

	s.r, err = sql.Open("sqlite", dsn(abs,
		"_pragma", "busy_timeout("+busyMS+")",
		"_pragma", "foreign_keys(1)",
		"_pragma", "query_only(1)",
	))
	if err != nil {
		_ = s.w.Close()
		return nil, s.wrap("open", err)
	}
	readers := max(4, runtime.GOMAXPROCS(0))
	s.r.SetMaxOpenConns(readers)
	s.r.SetMaxIdleConns(readers)
	s.tok, err = sql.Open("sqlite", dsn(abs,
		"_pragma", "busy_timeout("+busyMS+")",
		"_pragma", "query_only(1)",
	))
	if err != nil {
		_ = s.r.Close()
		_ = s.w.Close()
		return nil, s.wrap("open", err)
	}
	s.tok.SetMaxOpenConns(1)
	s.tok.SetMaxIdleConns(1)

	if err := s.init(ctx); err != nil {
		_ = s.tok.Close()
		_ = s.r.Close()
		_ = s.w.Close()
		return nil, s.wrap("open", err)
	}
	s.cp = newCheckpointer(dsn(abs,
		"_pragma", "busy_timeout("+busyMS+")",
		"_pragma", "synchronous("+syncMode+")",
	))
	return s, nil
}

func (s *Store) init(ctx context.Context) error {
	if err := s.w.PingContext(ctx); err != nil {
		return err
	}
	from, to, err := migrate(ctx, s.w)
	if err != nil {
		return err
	}
	if from != to {
		s.log.Info("store schema migrated", "path", s.path, "from", from, "to", to)
	}
	var upto int64
	if err := s.w.QueryRowContext(ctx, `SELECT indexed_upto FROM fts_state`).Scan(&upto); err != nil {
		return err
	}
	s.ftsUpto.Store(upto)
	return s.st.prepare(ctx, s.r)
}

// tokenReader is the connection token lookups use (the readers when
// opened read-only).
func (s *Store) tokenReader() *sql.DB {
	if s.tok != nil {
		return s.tok
	}
	return s.r
}

// OldSchemaError says a database opened read-only has an older schema than
// this build reads; opening it writable once migrates it.
type OldSchemaError struct{ Found, Want int }

func (e *OldSchemaError) Error() string {
	return fmt.Sprintf("database schema version %d is older than this talaria's (%d); open it writable once (any talaria run) to upgrade it", e.Found, e.Want)
}

// openReadOnly is Open with Options.ReadOnly: readers only, mode=ro.
func (s *Store) openReadOnly(ctx context.Context) (*Store, error) {
	if _, err := os.Stat(s.path); err != nil {
		return nil, s.wrap("open", err)
	}
	s.readOnly = true
	var err error
	s.r, err = sql.Open("sqlite", dsn(s.path,
		"mode", "ro",
		"_pragma", "busy_timeout("+fmt.Sprint(s.busy.Milliseconds())+")",
		"_pragma", "query_only(1)",
	))
	if err != nil {
		return nil, s.wrap("open", err)
	}
	readers := max(4, runtime.GOMAXPROCS(0))
	s.r.SetMaxOpenConns(readers)
	s.r.SetMaxIdleConns(readers)
	fail := func(err error) (*Store, error) {
		_ = s.r.Close()
		var old *OldSchemaError
		var tooNew *SchemaTooNewError
		if errors.As(err, &old) || errors.As(err, &tooNew) {
			return nil, err
		}
		return nil, s.wrap("open", err)
	}
	var version int
	if err := s.r.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return fail(err)
	}
	switch {
	case version > SchemaVersion:
		return fail(schemaTooNew(version))
	case version < SchemaVersion:
		return fail(&OldSchemaError{Found: version, Want: SchemaVersion})
	}
	var upto int64
	if err := s.r.QueryRowContext(ctx, `SELECT indexed_upto FROM fts_state`).Scan(&upto); err != nil {
		return fail(err)
	}
	s.ftsUpto.Store(upto)
	if err := s.st.prepare(ctx, s.r); err != nil {
		return fail(err)
	}
	return s, nil
}

// prepareFile creates the parent directory (0700) and an empty file (0600)
// so the database is private to its user from the first byte.
func prepareFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// dsn builds a file: URI so that any byte of the path (even '?' or '#')
// survives, with the driver's parameters as key/value pairs.
func dsn(path string, kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Add(kv[i], kv[i+1])
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: q.Encode()}
	if !strings.HasPrefix(u.Path, "/") {
		u.Path = "/" + u.Path // Windows drive letters
	}
	return u.String()
}

func syncPragma(mode string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(mode)) {
	case "", SyncNormal:
		return "NORMAL", nil
	case SyncFull:
		return "FULL", nil
	}
	return "", fmt.Errorf("synchronous %q: want %q or %q", mode, SyncNormal, SyncFull)
}

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Close closes the database. Calls after Close fail with store.KindClosed;
// closing twice is not an error.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.wmu <- struct{}{} // let a write in progress finish
	if s.wc != nil {
		closeWriter(s.wc, false)
		s.wc = nil
	}
	<-s.wmu
	s.st.close()
	if s.w == nil {
		return s.wrap("close", s.r.Close())
	}
	s.cp.stop()
	var tokErr error
	if s.tok != nil {
		tokErr = s.tok.Close()
	}
	return s.wrap("close", errors.Join(s.r.Close(), s.w.Close(), tokErr))
}

// ready fails once the store is closed.
func (s *Store) ready(op string) error {
	if s.closed.Load() {
		return s.wrap(op, errClosed)
	}
	return nil
}

// notFound is the error for a missing row.
func (s *Store) notFound(op, what string) error {
	return sqlrows.NotFound(op, s.path, what)
}
