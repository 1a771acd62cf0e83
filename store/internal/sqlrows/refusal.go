package sqlrows

import (
	"errors"
	"fmt"

	"github.com/talaria-agent/talaria/store"
)

// A fenced write's admission is one statement that finds nothing when the
// write is refused; only then does a backend read these rows, in the same
// transaction, to say why.
const (
	// SessionStateSQL reads session ? for NotLive.
	SessionStateSQL = `SELECT end_reason, ended_at FROM sessions WHERE id = ?`
	// LeaseStateSQL reads the lease of session ? for Fenced.
	LeaseStateSQL = `SELECT token, released FROM leases WHERE session_id = ?`
)

// NotLive explains a refusal from the session row sc reads (end_reason,
// ended_at): KindNotFound without a row, KindEnded (wrapping
// store.ErrEnded) for an ended session, nil for a live one.
func NotLive(sc Scanner, noRows error, op, path, id string) error {
	var (
		reason string
		ended  *int64
	)
	err := sc.Scan(&reason, &ended)
	if errors.Is(err, noRows) {
		return NotFound(op, path, "session "+id)
	}
	if err != nil || ended == nil {
		return err
	}
	if reason == "" {
		reason = "no reason given"
	}
	return &store.Error{Op: op, Kind: store.KindEnded, Path: path,
		Err: fmt.Errorf("session %s (ended: %s): %w", id, reason, store.ErrEnded)}
}

// Fenced explains the refusal of f from the lease row sc reads (token,
// released) as KindLeaseLost. Expiry alone does not void a token: until
// someone else takes the lease over, its holder may still write.
func Fenced(sc Scanner, noRows error, op, path string, f store.Fence) error {
	var (
		token    int64
		released bool
	)
	err := sc.Scan(&token, &released)
	var why string
	switch {
	case errors.Is(err, noRows):
		why = "no lease was ever taken"
	case err != nil:
		return err
	case token != f.Token:
		why = fmt.Sprintf("the lease is now at token %d", token)
	case released:
		why = "the lease was released"
	default:
		// Read committed (PostgreSQL): the lease changed between the
		// admission and this read. Either way the write was refused.
		why = "the lease changed while writing"
	}
	return &store.Error{Op: op, Kind: store.KindLeaseLost, Path: path,
		Err: fmt.Errorf("session %s, token %d: %s", f.SessionID, f.Token, why)}
}
