// Package storeopen is the one place that turns a database setting into an
// open store.Store: a postgres:// URL opens store/postgres, anything else
// (an empty URL with a file path, or sqlite://PATH) opens store/sqlite.
// Every command that opens the database goes through Open.
package storeopen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/postgres"
	"github.com/talaria-agent/talaria/store/sqlite"
)

// Options select and tune the database.
type Options struct {
	// URL is postgres://… (or postgresql://…) for PostgreSQL, or
	// sqlite://PATH for a SQLite file; "" means the SQLite file at Path.
	URL string
	// Path is the SQLite file used when URL is "".
	Path string
	// Synchronous is the SQLite durability mode ("normal" or "full").
	Synchronous string
	// ReadOnly opens an existing SQLite file read-only, for commands that
	// only read: they then work on a read-only file and while another
	// process holds the write lock. A file that does not exist yet, or
	// whose schema is older than this binary's, is opened writable as
	// usual. PostgreSQL ignores it.
	ReadOnly bool
	// MustExist refuses to create a SQLite file (or its folder): commands
	// that only read, or change what is already there, get a
	// *MissingError for a path with no database, so a typo never leaves
	// an empty database behind. PostgreSQL ignores it.
	MustExist bool
	Logger    *slog.Logger
}

// MissingError is a SQLite database that does not exist where Options
// point (with MustExist).
type MissingError struct{ Path string }

func (e *MissingError) Error() string {
	return "no database at " + e.Path + " (the first `talaria run` creates it; check the path, --database, TALARIA_DB or database: in the config)"
}

// Unwrap lets errors.Is(err, fs.ErrNotExist) recognise it.
func (e *MissingError) Unwrap() error { return os.ErrNotExist }

// Backend names.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Target says which backend o selects and where: the SQLite file path, or
// the PostgreSQL URL.
func Target(o Options) (backend, where string, err error) {
	u := strings.TrimSpace(o.URL)
	switch {
	case u == "":
		return SQLite, o.Path, nil
	case postgres.IsURL(u):
		return Postgres, u, nil
	case strings.HasPrefix(u, "sqlite://"):
		p := strings.TrimPrefix(u, "sqlite://")
		if p == "" {
			return "", "", fmt.Errorf("database URL %q names no file; use sqlite:///path/to/state.db", u)
		}
		return SQLite, p, nil
	}
	return "", "", fmt.Errorf("database URL %q: use postgres://user@host/dbname or sqlite://PATH", postgres.Redact(u))
}

// Describe is where o points, for people: the SQLite path or the URL
// without its password.
func Describe(o Options) string {
	backend, where, err := Target(o)
	if err != nil {
		return "(invalid database URL)"
	}
	if backend == Postgres {
		return postgres.Redact(where)
	}
	return where
}

// Open opens the database o selects. Errors are *store.Error values (or a
// plain error for an invalid URL).
func Open(ctx context.Context, o Options) (store.Store, error) {
	backend, where, err := Target(o)
	if err != nil {
		return nil, err
	}
	if backend == Postgres {
		return postgres.Open(ctx, where, postgres.Options{Logger: o.Logger})
	}
	if o.MustExist {
		if _, err := os.Stat(where); errors.Is(err, os.ErrNotExist) {
			return nil, &MissingError{Path: where}
		}
	}
	if o.ReadOnly {
		if _, err := os.Stat(where); err == nil {
			st, err := sqlite.Open(ctx, where, sqlite.Options{ReadOnly: true, Logger: o.Logger})
			var old *sqlite.OldSchemaError
			if !errors.As(err, &old) {
				return st, err
			}
		}
	}
	return sqlite.Open(ctx, where, sqlite.Options{Synchronous: o.Synchronous, Logger: o.Logger})
}
