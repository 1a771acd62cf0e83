package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

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
		if !errors.Is(err, pgx.ErrNoRows) {
			return store.Lease{}, s.sessionWrite(op, sessionID, err)
		}
		held := &store.LeaseHeldError{SessionID: sessionID}
		var expiresAt int64
		var released bool
		err = s.pool.QueryRow(ctx, leaseSQL, sessionID).Scan(&held.Holder, &held.Token, &expiresAt, &released)
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

// acquireAppendSQL is AcquireLeaseAppend in one statement: acquireSQL on a
// live session only ($29 is the ttl), then appendSQL's reservation and
// insert under the lease just taken ($3 rows, $5 to $28 their columns).
// Locks are taken in appendSQL's order, lease row first, then the
// session's, so it cannot deadlock with the holder's appends. The live
// check in acq reads the statement's snapshot; adm re-checks it on the
// session row's newest version, so a session ended meanwhile reserves
// nothing (adm is empty) and the caller gives the lease back. The result
// has one row per inserted message (one with NULL id when there are none),
// none when the lease was not taken.
const acquireAppendSQL = `WITH acq AS (
		INSERT INTO leases AS l (session_id, holder, token, acquired_at, expires_at, released)
		SELECT id, $2, 1, ` + dbNow + `, ` + dbNow + ` + $29, false FROM sessions WHERE id = $1 AND ended_at IS NULL
		ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, token = l.token + 1,
			acquired_at = excluded.acquired_at, expires_at = excluded.expires_at, released = false
		WHERE l.released OR l.holder = excluded.holder OR l.expires_at <= excluded.acquired_at
		RETURNING token, acquired_at, expires_at),
	adm AS (
		UPDATE sessions SET last_seq = last_seq + $3, updated_at = CASE WHEN $3 > 0 THEN $4 ELSE updated_at END
		WHERE id = $1 AND ended_at IS NULL AND EXISTS (SELECT 1 FROM acq)
		RETURNING last_seq),
	` + insRowsSQL + `
	SELECT a.token, a.acquired_at, a.expires_at, (SELECT count(*) FROM adm), i.id, i.seq
	FROM acq a LEFT JOIN ins i ON true`

// AcquireLeaseAppend takes the lease of a live session and appends msgs
// under its fence in one statement (see acquireAppendSQL and store.Leases).
func (s *Store) AcquireLeaseAppend(ctx context.Context, sessionID, holder string, ttl time.Duration, msgs ...*store.Message) (store.Lease, error) {
	const op = "acquire lease"
	if err := s.ready(op); err != nil {
		return store.Lease{}, err
	}
	if ttl <= 0 {
		return store.Lease{}, s.wrap(op, fmt.Errorf("lease ttl %v: must be positive", ttl))
	}
	rows, err := s.encode(op, msgs)
	if err != nil {
		return store.Lease{}, err
	}
	args := append([]any{sessionID, holder, int64(len(rows)), sqlrows.Nanos(sqlrows.Now())}, columns(rows)...)
	args = append(args, ttl.Nanoseconds())
	// Not taken: the explanation needs a second read; a lease released or
	// a session created between the two is simply tried again.
	for range 3 {
		l, reserved, got, err := s.acquireAppend(ctx, sessionID, holder, args)
		if err != nil {
			return store.Lease{}, s.wrap(op, err)
		}
		if l.Token != 0 && !reserved {
			// Ended after the statement's snapshot was taken.
			if err := s.ReleaseLease(context.WithoutCancel(ctx), l); err != nil {
				return store.Lease{}, err
			}
		}
		if l.Token != 0 && reserved {
			if len(got) != len(rows) {
				return store.Lease{}, s.wrap(op, fmt.Errorf("append stored %d of %d rows", len(got), len(rows)))
			}
			if err := place(rows, got); err != nil {
				return store.Lease{}, s.wrap(op, err)
			}
			publish(sessionID, msgs, rows)
			return l, nil
		}
		if err := s.whyNotLeased(ctx, op, sessionID, holder); err != nil {
			return store.Lease{}, err
		}
	}
	return store.Lease{}, s.wrap(op, fmt.Errorf("session %s: the lease kept changing; try again", sessionID))
}

// acquireAppend runs acquireAppendSQL: the lease (zero when not taken),
// whether the session's seqs were reserved, and the inserted rows.
func (s *Store) acquireAppend(ctx context.Context, sessionID, holder string, args []any) (store.Lease, bool, []idSeq, error) {
	res, err := s.pool.Query(ctx, acquireAppendSQL, args...)
	if err != nil {
		return store.Lease{}, false, nil, err
	}
	defer res.Close()
	l := store.Lease{SessionID: sessionID, Holder: holder}
	var (
		acquired, expires, reserved int64
		got                         []idSeq
	)
	for res.Next() {
		var id, seq *int64
		if err := res.Scan(&l.Token, &acquired, &expires, &reserved, &id, &seq); err != nil {
			return store.Lease{}, false, nil, err
		}
		if id != nil && seq != nil {
			got = append(got, idSeq{*id, *seq})
		}
	}
	if err := res.Err(); err != nil {
		return store.Lease{}, false, nil, err
	}
	l.AcquiredAt, l.ExpiresAt = sqlrows.FromNanos(acquired), sqlrows.FromNanos(expires)
	return l, reserved > 0, got, nil
}

// whyNotLeased explains an AcquireLeaseAppend that took nothing: an
// unknown session, another holder's live lease, or an ended session, in
// that order; nil when none holds any more (try again).
func (s *Store) whyNotLeased(ctx context.Context, op, sessionID, holder string) error {
	return s.tx(ctx, op, func(tx pgx.Tx) error {
		held := &store.LeaseHeldError{SessionID: sessionID}
		var (
			expiresAt int64
			released  bool
			live      bool
		)
		err := tx.QueryRow(ctx, `SELECT holder, token, expires_at, released, expires_at > `+dbNow+`
			FROM leases WHERE session_id = $1`, sessionID).Scan(&held.Holder, &held.Token, &expiresAt, &released, &live)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if err == nil && !released && live && held.Holder != holder {
			// An unknown session has no lease row (ON DELETE CASCADE).
			held.ExpiresAt = sqlrows.FromNanos(expiresAt)
			return held
		}
		return s.whyNotLive(ctx, tx, op, sessionID)
	})
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
	return s.exec(ctx, "release lease", `UPDATE leases SET released = true, expires_at = `+dbNow+`
		WHERE session_id = $1 AND token = $2 AND NOT released`, l.SessionID, l.Token)
}
