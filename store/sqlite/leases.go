package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// AcquireLease takes the session's turn lease for holder with a new, larger
// token, unless another holder's unreleased lease has not expired, in which
// case it returns a *store.LeaseHeldError without waiting. The session must
// exist.
func (s *Store) AcquireLease(ctx context.Context, sessionID, holder string, ttl time.Duration) (store.Lease, error) {
	const op = "acquire lease"
	if ttl <= 0 {
		return store.Lease{}, s.wrap(op, fmt.Errorf("lease ttl %v: must be positive", ttl))
	}
	var l store.Lease
	err := s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		if err := s.mustExist(ctx, tx, op, sessionID); err != nil {
			return err
		}
		var err error
		l, err = takeLease(ctx, tx, sessionID, holder, ttl)
		return err
	})
	if err != nil {
		return store.Lease{}, err
	}
	return l, nil
}

// AcquireLeaseAppend takes the lease of a live session and appends msgs
// under its fence, in one transaction (see store.Leases): the held check
// comes first, then admit checks that the session is live with the new
// token, so an ended session rolls the lease back with the rows.
func (s *Store) AcquireLeaseAppend(ctx context.Context, sessionID, holder string, ttl time.Duration, msgs ...*store.Message) (store.Lease, error) {
	const op = "acquire lease"
	if ttl <= 0 {
		return store.Lease{}, s.wrap(op, fmt.Errorf("lease ttl %v: must be positive", ttl))
	}
	rows, err := sqlrows.Encode(msgs)
	if err != nil {
		return store.Lease{}, s.wrap(op, err)
	}
	var l store.Lease
	err = s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		if err := s.mustExist(ctx, tx, op, sessionID); err != nil {
			return err
		}
		var err error
		if l, err = takeLease(ctx, tx, sessionID, holder, ttl); err != nil {
			return err
		}
		first, err := s.admit(ctx, tx, op, l.Fence())
		if err != nil || len(rows) == 0 {
			return err
		}
		if err := s.insert(ctx, tx, sessionID, first, rows); err != nil {
			return err
		}
		return s.maybeIndex(ctx, tx, rows[len(rows)-1].ID)
	})
	if err != nil {
		return store.Lease{}, err
	}
	sqlrows.Publish(sessionID, msgs, rows)
	return l, nil
}

// takeLease is AcquireLease's work inside tx, on a session known to exist.
func takeLease(ctx context.Context, tx *wtx, sessionID, holder string, ttl time.Duration) (store.Lease, error) {
	t := sqlrows.Now()
	var (
		curHolder string
		token     int64
		expires   int64
		released  bool
	)
	err := tx.QueryRowContext(ctx, sqlrows.LeaseSQL, sessionID).Scan(&curHolder, &token, &expires, &released)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		token = 0
	case err != nil:
		return store.Lease{}, err
	case !released && curHolder != holder && expires > t.UnixNano():
		return store.Lease{}, &store.LeaseHeldError{SessionID: sessionID, Holder: curHolder, Token: token, ExpiresAt: sqlrows.FromNanos(expires)}
	}
	l := store.Lease{SessionID: sessionID, Holder: holder, Token: token + 1, AcquiredAt: t, ExpiresAt: t.Add(ttl)}
	_, err = tx.ExecContext(ctx, `INSERT INTO leases (session_id, holder, token, acquired_at, expires_at, released)
		VALUES (?, ?, ?, ?, ?, 0)
		ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, token = excluded.token,
			acquired_at = excluded.acquired_at, expires_at = excluded.expires_at, released = 0`,
		sessionID, holder, l.Token, sqlrows.Nanos(l.AcquiredAt), sqlrows.Nanos(l.ExpiresAt))
	if err != nil {
		return store.Lease{}, err
	}
	return l, nil
}

// RefreshLease extends l by ttl from now. It succeeds while l's token is
// current and unreleased, even past expiry as long as nobody took over;
// otherwise the error wraps store.ErrLeaseLost.
func (s *Store) RefreshLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	const op = "refresh lease"
	if ttl <= 0 {
		return store.Lease{}, s.wrap(op, fmt.Errorf("lease ttl %v: must be positive", ttl))
	}
	out := l
	err := s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		out.ExpiresAt = sqlrows.Now().Add(ttl)
		return execOne(ctx, tx, func() error {
			return &store.Error{Op: op, Kind: store.KindLeaseLost, Path: s.path,
				Err: fmt.Errorf("session %s, token %d: taken over or released", l.SessionID, l.Token)}
		},
			`UPDATE leases SET expires_at = ? WHERE session_id = ? AND token = ? AND holder = ? AND released = 0`,
			sqlrows.Nanos(out.ExpiresAt), l.SessionID, l.Token, l.Holder)
	})
	if err != nil {
		return store.Lease{}, err
	}
	return out, nil
}

// ReleaseLease gives l up. The row stays (marked released) so the next
// acquire gets a larger token. Releasing a lost or already released lease
// is not an error.
func (s *Store) ReleaseLease(ctx context.Context, l store.Lease) error {
	return s.write(ctx, "release lease", func(ctx context.Context, tx *wtx) error {
		_, err := tx.ExecContext(ctx, `UPDATE leases SET released = 1, expires_at = ?
			WHERE session_id = ? AND token = ? AND released = 0`, sqlrows.Nanos(sqlrows.Now()), l.SessionID, l.Token)
		return err
	})
}
