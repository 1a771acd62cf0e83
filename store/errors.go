package store

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors; backends wrap them (errors.Is works through *Error).
var (
	ErrNotFound  = errors.New("not found")
	ErrLeaseLost = errors.New("turn lease lost")
	ErrEnded     = errors.New("session has ended")
	// ErrStampChanged: SetSystemPrompt found another prompt stamp than the
	// one it was to replace (another writer rebuilt the prompt first).
	ErrStampChanged = errors.New("system prompt stamp changed")
)

// ErrorKind is the real cause of a persistence failure, so the turn can say
// "the database is locked by another process" instead of "disk full".
type ErrorKind string

const (
	KindOther     ErrorKind = "other"
	KindDiskFull  ErrorKind = "disk_full"
	KindLocked    ErrorKind = "locked"
	KindCorrupt   ErrorKind = "corrupt"
	KindReadOnly  ErrorKind = "read_only"
	KindLeaseLost ErrorKind = "lease_lost"
	KindNotFound  ErrorKind = "not_found"
	KindClosed    ErrorKind = "closed"
	// KindEnded: the session was closed (e.g. continued in a compression
	// child); writers follow the lineage to the live tip.
	KindEnded ErrorKind = "session_ended"
	// KindUnavailable: a database server cannot be reached (refused or cut
	// connections, a server shutting down). Writes resume once it is back.
	KindUnavailable ErrorKind = "unavailable"
)

// Error is a failed store operation.
type Error struct {
	Op   string    // "append", "open", ...
	Kind ErrorKind // the real cause
	Path string    // database file, when there is one
	Err  error
}

func (e *Error) Error() string {
	s := "store " + e.Op
	if e.Path != "" {
		s += " " + e.Path
	}
	s += ": "
	if hint := e.Kind.Hint(); hint != "" {
		s += hint + ": "
	}
	if e.Err != nil {
		s += e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Is lets errors.Is(err, ErrLeaseLost / ErrNotFound) match by kind.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrLeaseLost:
		return e.Kind == KindLeaseLost
	case ErrNotFound:
		return e.Kind == KindNotFound
	case ErrEnded:
		return e.Kind == KindEnded
	}
	return false
}

// Hint is a short description of the cause a person can act on, for a
// database not named (Describe names it).
func (k ErrorKind) Hint() string { return describe(k, "", "") }

// KindOf returns the ErrorKind of err (KindOther when it is not an *Error).
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	if errors.Is(err, ErrLeaseLost) {
		return KindLeaseLost
	}
	if errors.Is(err, ErrNotFound) {
		return KindNotFound
	}
	if errors.Is(err, ErrEnded) {
		return KindEnded
	}
	return KindOther
}

// LeaseHeldError says another holder has the session's lease.
type LeaseHeldError struct {
	SessionID string
	Holder    string
	// Token is the holder's fencing token: releasing a Lease with it frees
	// the session only while that holder still has it, which is how a
	// holder known to be dead (a killed process) is replaced early.
	Token     int64
	ExpiresAt time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("session %s is busy: a turn held by %s runs until %s at the latest",
		e.SessionID, e.Holder, e.ExpiresAt.Format(time.TimeOnly))
}
