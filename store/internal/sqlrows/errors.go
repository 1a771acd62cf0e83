package sqlrows

import (
	"context"
	"errors"

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
