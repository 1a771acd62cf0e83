package sqlrows

import (
	"context"
	"errors"
	"fmt"

	"github.com/talaria-agent/talaria/store"
)

// ErrClosed is reported for any call after a store's Close.
var ErrClosed = errors.New("used after Close")

// NotFound is the error for a missing row, what naming it. The Kind alone
// makes errors.Is(err, store.ErrNotFound) true; wrapping the sentinel too
// would only repeat "not found" in the message.
func NotFound(op, path, what string) error {
	return &store.Error{Op: op, Kind: store.KindNotFound, Path: path, Err: errors.New(what)}
}

// Classified reports whether err already is what a store returns (a
// *store.Error or *store.LeaseHeldError), to be passed on unchanged.
func Classified(err error) bool {
	var se *store.Error
	var held *store.LeaseHeldError
	return errors.As(err, &se) || errors.As(err, &held)
}

// CommonKind classifies the causes both backends share: use after Close,
// a missing row (noRows is the driver's sentinel), a lost lease, and a
// cancelled or expired context (KindOther: the caller gave up, the
// database is fine). ok is false for anything driver-specific.
func CommonKind(err, noRows error) (kind store.ErrorKind, ok bool) {
	switch {
	case errors.Is(err, ErrClosed):
		return store.KindClosed, true
	case errors.Is(err, noRows), errors.Is(err, store.ErrNotFound):
		return store.KindNotFound, true
	case errors.Is(err, store.ErrLeaseLost):
		return store.KindLeaseLost, true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return store.KindOther, true
	}
	return "", false
}

// SchemaTooNewError says the database was written by a newer Talaria whose
// schema this build does not know; opening it could damage it. Both
// backends export it as their own SchemaTooNewError.
type SchemaTooNewError struct {
	Found, Known int
	instead      string // what the advice suggests using instead
}

// SchemaTooNew is the error for schema version found, newer than known;
// instead names what else to open ("another database file").
func SchemaTooNew(found, known int, instead string) *SchemaTooNewError {
	return &SchemaTooNewError{Found: found, Known: known, instead: instead}
}

// Error says which versions clash and what to do.
func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("database schema version %d is newer than this talaria knows (%d); "+
		"upgrade talaria or use %s", e.Found, e.Known, e.instead)
}
