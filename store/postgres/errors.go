package postgres

import (
	"errors"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// wrap turns err into a *store.Error for op with the real Kind. It returns
// nil for nil and leaves an existing *store.Error or *store.LeaseHeldError
// as it is.
func (s *Store) wrap(op string, err error) error {
	if err == nil || sqlrows.Classified(err) {
		return err
	}
	kind := kindOf(err)
	if kind == store.KindOther && s.closed.Load() {
		kind = store.KindClosed // a call racing Close fails on the closed pool
	}
	return &store.Error{Op: op, Kind: kind, Path: s.name, Err: err}
}

// kindOf maps a pgx error to the cause a person can act on.
func kindOf(err error) store.ErrorKind {
	if kind, ok := sqlrows.CommonKind(err, pgx.ErrNoRows); ok {
		return kind
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return kindOfCode(pe.Code)
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		pgconn.SafeToRetry(err), pgconn.Timeout(err):
		return store.KindUnavailable
	}
	msg := err.Error()
	for _, s := range []string{"closed pool", "conn closed", "unexpected EOF", "broken pipe",
		"connection reset", "connection refused", "failed to connect"} {
		if strings.Contains(msg, s) {
			if s == "closed pool" {
				return store.KindClosed
			}
			return store.KindUnavailable
		}
	}
	return store.KindOther
}

// kindOfCode maps an SQLSTATE (https://www.postgresql.org/docs/current/errcodes-appendix.html).
func kindOfCode(code string) store.ErrorKind {
	switch {
	case code == "53100": // disk_full
		return store.KindDiskFull
	case code == "25006": // read_only_sql_transaction (a standby, or default_transaction_read_only)
		return store.KindReadOnly
	case code == "55P03", code == "40P01", code == "40001": // lock_not_available, deadlock, serialization
		return store.KindLocked
	case code == "XX001", code == "XX002": // data_corrupted, index_corrupted
		return store.KindCorrupt
	case strings.HasPrefix(code, "08"), // connection exceptions
		code == "57P01", code == "57P02", code == "57P03", // admin/crash shutdown, cannot connect now
		code == "53300": // too_many_connections
		return store.KindUnavailable
	case code == "42501": // insufficient_privilege
		return store.KindReadOnly
	}
	return store.KindOther
}

// sessionWrite is the error of a write into a session's rows: a failed
// foreign key means there is no such session; anything else is wrapped.
func (s *Store) sessionWrite(op, sessionID string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" { // foreign_key_violation
		return s.notFound(op, "session "+sessionID)
	}
	return s.wrap(op, err)
}

// lookup is the error of reading one row: no row is what, not found;
// anything else is wrapped.
func (s *Store) lookup(op, what string, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return s.notFound(op, what)
	}
	return s.wrap(op, err)
}
