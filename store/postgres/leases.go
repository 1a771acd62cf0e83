package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// acquireSQL takes the lease in one statement: a first lease inserts token
// 1; otherwise the row is updated to the next token, but only when it is
// free (released), expired, or held by the same holder. ON CONFLICT locks
// the row and re-checks the condition on its newest version, so of several
// nodes racing for one session exactly one wins. $3 is the ttl in
// nanoseconds; times come from the database clock.
const acquireSQL = `INSERT INTO leases AS l (session_id, holder, token, acquired_at, expires_at, released)
	VALUES ($1, $2, 1, ` + dbNow + `, ` + dbNow + ` + $3, false)
	ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, token = l.token + 1,
		acquired_at = excluded.acquired_at, expires_at = excluded.expires_at, released = false
	WHERE l.released OR l.holder = excluded.holder OR l.expires_at <= excluded.acquired_at
	RETURNING token, acquired_at, expires_at`

// AcquireLease takes the session's turn lease for holder with a new, larger
// token, unless another holder's unreleased lease has not expired, in which
// case it returns a *store.LeaseHeldError without waiting. The session must
// exist.
func (s *Store) AcquireLease(ctx context.Context, sessionID, holder string, ttl time.Duration) (store.Lease, error) {
	const op = "acquire lease"
	if err := s.ready(op); err != nil {
		return store.Lease{}, err
	}
	if ttl <= 0 {
		return store.Lease{}, s.wrap(op, fmt.Errorf("lease ttl %v: must be positive", ttl))
	}
	// The held case needs a second read; a lease released between the two
	// is simply tried again.
	for range 3 {
		var acquired, expires int64
		l := store.Lease{SessionID: sessionID, Holder: holder}
		err := s.pool.QueryRow(ctx, acquireSQL, sessionID, holder, ttl.Nanoseconds()).
			Scan(&l.Token, &acquired, &expires)
		if err == nil {
			l.AcquiredAt, l.ExpiresAt = sqlrows.FromNanos(acquired), sqlrows.FromNanos(expires)
			return l, nil
		}
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23503" { // foreign key: no such session
			return store.Lease{}, s.notFound(op, "session "+sessionID)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return store.Lease{}, s.wrap(op, err)
		}
		held := &store.LeaseHeldError{SessionID: sessionID}
		var expiresAt int64
		var released bool
		err = s.pool.QueryRow(ctx, `SELECT holder, token, expires_at, released FROM leases WHERE session_id = $1`,
			sessionID).Scan(&held.Holder, &held.Token, &expiresAt, &released)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return store.Lease{}, s.wrap(op, err)
		}
		if err == nil && !released && held.Holder != holder {
			held.ExpiresAt = sqlrows.FromNanos(expiresAt)
			return store.Lease{}, held
		}
	}
	return store.Lease{}, s.wrap(op, fmt.Errorf("session %s: the lease kept changing; try again", sessionID))
}

// RefreshLease extends l by ttl from now (database clock). It succeeds while
// l's token is current and unreleased, even past expiry as long as nobody
// took over; otherwise the error wraps store.ErrLeaseLost.
func (s *Store) RefreshLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	const op = "refresh lease"
	if err := s.ready(op); err != nil {
		return store.Lease{}, err
	}
	if ttl <= 0 {
		return store.Lease{}, s.wrap(op, fmt.Errorf("lease ttl %v: must be positive", ttl))
	}
	var expires int64
	err := s.pool.QueryRow(ctx, `UPDATE leases SET expires_at = `+dbNow+` + $1
		WHERE session_id = $2 AND token = $3 AND holder = $4 AND NOT released RETURNING expires_at`,
		ttl.Nanoseconds(), l.SessionID, l.Token, l.Holder).Scan(&expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Lease{}, &store.Error{Op: op, Kind: store.KindLeaseLost, Path: s.name,
			Err: fmt.Errorf("session %s, token %d: taken over or released", l.SessionID, l.Token)}
	}
	if err != nil {
		return store.Lease{}, s.wrap(op, err)
	}
	out := l
	out.ExpiresAt = sqlrows.FromNanos(expires)
	return out, nil
}

// ReleaseLease gives l up. The row stays (marked released) so the next
// acquire gets a larger token. Releasing a lost or already released lease
// is not an error.
func (s *Store) ReleaseLease(ctx context.Context, l store.Lease) error {
	const op = "release lease"
	if err := s.ready(op); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `UPDATE leases SET released = true, expires_at = `+dbNow+`
		WHERE session_id = $1 AND token = $2 AND NOT released`, l.SessionID, l.Token)
	return s.wrap(op, err)
}
