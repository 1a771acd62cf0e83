package sqlite

import (
	"database/sql"
	"errors"
	"os"
	"syscall"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// SQLite primary result codes (https://sqlite.org/rescode.html); the driver
// reports extended codes, whose low byte is the primary one.
const (
	codePerm     = 3
	codeBusy     = 5
	codeLocked   = 6
	codeReadOnly = 8
	codeCorrupt  = 11
	codeFull     = 13
	codeCantOpen = 14
	codeNotADB   = 26
	codeIOErr    = 10
)

// Extended SQLITE_IOERR codes that mean no space could be had: a full disk
// or a file-size limit (EFBIG, RLIMIT_FSIZE) while writing, growing the WAL
// index (SHMSIZE: what opening a database on a full disk reports), syncing
// or truncating.
var ioErrNoSpace = map[int]bool{
	codeIOErr | 3<<8:  true, // IOERR_WRITE
	codeIOErr | 4<<8:  true, // IOERR_FSYNC
	codeIOErr | 5<<8:  true, // IOERR_DIR_FSYNC
	codeIOErr | 6<<8:  true, // IOERR_TRUNCATE
	codeIOErr | 19<<8: true, // IOERR_SHMSIZE (4874)
}

// coder is what modernc.org/sqlite's *Error offers; declared here so the
// mapping can be tested without a real failing database.
type coder interface {
	error
	Code() int
}

// errClosed is reported for any call after Close.
var errClosed = sqlrows.ErrClosed

// errReadOnly is reported for a write to a Store opened with ReadOnly.
var errReadOnly = errors.New("opened read-only")

// wrap turns err into a *store.Error for op with the real Kind. It returns
// nil for nil and leaves an existing *store.Error or *store.LeaseHeldError
// as it is.
func (s *Store) wrap(op string, err error) error {
	if err == nil || sqlrows.Classified(err) {
		return err
	}
	return &store.Error{Op: op, Kind: kindOf(err, s.path), Path: s.path, Err: err}
}

// kindOf maps a driver error to the cause a person can act on.
func kindOf(err error, path string) store.ErrorKind {
	if kind, ok := sqlrows.CommonKind(err, sql.ErrNoRows); ok {
		return kind
	}
	if errors.Is(err, sql.ErrConnDone) {
		return store.KindClosed
	}
	var c coder
	if errors.As(err, &c) {
		return kindOfCode(c.Code(), path)
	}
	if errors.Is(err, os.ErrPermission) {
		return store.KindReadOnly
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EFBIG) || errors.Is(err, syscall.EDQUOT) {
		return store.KindDiskFull
	}
	if err.Error() == "sql: database is closed" {
		return store.KindClosed
	}
	return store.KindOther
}

// kindOfCode maps an SQLite result code. CANTOPEN is only "read-only" when
// the file or its directory is not writable; otherwise the cause is unknown.
func kindOfCode(code int, path string) store.ErrorKind {
	if ioErrNoSpace[code] {
		return store.KindDiskFull
	}
	switch code & 0xff {
	case codeFull:
		return store.KindDiskFull
	case codeBusy, codeLocked:
		return store.KindLocked
	case codeCorrupt, codeNotADB:
		return store.KindCorrupt
	case codeReadOnly, codePerm:
		return store.KindReadOnly
	case codeCantOpen:
		if path != "" && !writable(path) {
			return store.KindReadOnly
		}
	}
	return store.KindOther
}

// lookup is the error of reading one row: no row is what, not found;
// anything else is wrapped.
func (s *Store) lookup(op, what string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return s.notFound(op, what)
	}
	return s.wrap(op, err)
}
