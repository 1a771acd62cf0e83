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

var _ store.Cluster = (*Store)(nil)

// streamChannel is the NOTIFY channel of new stream events; the payload is
// the session id. A notification is only a wake-up: the table is the source
// of truth, so a missed one costs latency, never an event.
const streamChannel = "talaria_stream"

// ClaimQueued takes the session's lease and its oldest queued message in
// one transaction (see store.Cluster).
func (s *Store) ClaimQueued(ctx context.Context, sessionID, holder string, ttl, settle time.Duration) (store.Claim, bool, error) {
	const op = "claim queued message"
	if err := s.ready(op); err != nil {
		return store.Claim{}, false, err
	}
	if ttl <= 0 {
		return store.Claim{}, false, s.wrap(op, fmt.Errorf("lease ttl %v: must be positive", ttl))
	}
	var (
		c  store.Claim
		ok bool
	)
	errNothing := errors.New("nothing to claim")
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The previous lease, locked so its state cannot change under us.
		var (
			prevHolder         string
			prevExpires, dbnow int64
			released, exists   bool
		)
		err := tx.QueryRow(ctx, `SELECT holder, expires_at, released, `+dbNow+` FROM leases WHERE session_id = $1 FOR UPDATE`,
			sessionID).Scan(&prevHolder, &prevExpires, &released, &dbnow)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		default:
			exists = true
			if !released && prevExpires > dbnow {
				return errNothing // a live lease: that holder runs the queue
			}
		}
		l := store.Lease{SessionID: sessionID, Holder: holder}
		var acquired, expires int64
		err = tx.QueryRow(ctx, acquireSQL, sessionID, holder, ttl.Nanoseconds()).Scan(&l.Token, &acquired, &expires)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNothing // taken meanwhile
		}
		if err != nil {
			return err
		}
		l.AcquiredAt, l.ExpiresAt = sqlrows.FromNanos(acquired), sqlrows.FromNanos(expires)
		var (
			m       store.QueuedMessage
			text    []byte
			created int64
			started *int64
		)
		err = tx.QueryRow(ctx, `SELECT id, session_id, turn_id, text, created_at, started_at FROM queue
			WHERE session_id = $1 ORDER BY id LIMIT 1`, sessionID).Scan(&m.ID, &m.SessionID, &m.TurnID, &text, &created, &started)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNothing // empty: the rollback undoes the acquire
		}
		if err != nil {
			return err
		}
		m.Text, m.CreatedAt = string(text), sqlrows.FromNanos(created)
		if started != nil {
			if exists && released && prevExpires > dbnow-settle.Nanoseconds() {
				return errNothing // its turn just ended; the node is dequeuing it
			}
			m.StartedAt = sqlrows.FromNanos(*started)
			c.Orphan = true
		} else {
			m.StartedAt = sqlrows.Now()
			if _, err := tx.Exec(ctx, `UPDATE queue SET started_at = $1 WHERE id = $2`, sqlrows.Nanos(m.StartedAt), m.ID); err != nil {
				return err
			}
		}
		c.Message, c.Lease, ok = m, l, true
		return nil
	})
	if errors.Is(err, errNothing) {
		return store.Claim{}, false, nil
	}
	if err != nil {
		return store.Claim{}, false, s.sessionWrite(op, sessionID, err)
	}
	return c, ok, nil
}

// ClaimableSessions lists sessions with queued messages and no live lease.
func (s *Store) ClaimableSessions(ctx context.Context) ([]string, error) {
	const op = "list claimable sessions"
	if err := s.ready(op); err != nil {
		return nil, err
	}
	var out []string
	err := s.retryRead(ctx, func() error {
		out = nil
		rows, err := s.pool.Query(ctx, `SELECT DISTINCT q.session_id FROM queue q
			LEFT JOIN leases l ON l.session_id = q.session_id
			WHERE l.session_id IS NULL OR l.released OR l.expires_at <= `+dbNow+` ORDER BY 1`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return out, nil
}

// appendStreamSQL takes the session's next id from stream_heads (whose
// row lock, held to the commit, makes ids visible in order), stores the
// event, and notifies every listening node on commit.
const appendStreamSQL = `WITH h AS (
		INSERT INTO stream_heads AS sh (session_id, last_id, prev_id) VALUES ($1, GREATEST($2::bigint, 1), 0)
		ON CONFLICT (session_id) DO UPDATE SET last_id = GREATEST(sh.last_id + 1, $2::bigint), prev_id = sh.last_id
		RETURNING last_id, prev_id),
	ins AS (
		INSERT INTO stream_events (session_id, id, type, turn_id, data, created_at)
		SELECT $1, last_id, $3, $4, $5, $6 FROM h RETURNING id)
	SELECT ins.id, h.prev_id FROM ins, h, (SELECT pg_notify('` + streamChannel + `', $1)) n`

// AppendStreamEvent stores an event with the session's next id.
func (s *Store) AppendStreamEvent(ctx context.Context, ev *store.StreamEvent, floor int64) error {
	const op = "append stream event"
	if err := s.ready(op); err != nil {
		return err
	}
	data := ev.Data
	if data == nil {
		data = []byte{}
	}
	var id, prev int64
	err := s.pool.QueryRow(ctx, appendStreamSQL, ev.SessionID, floor, ev.Type, ev.TurnID, data, sqlrows.Nanos(sqlrows.Now())).Scan(&id, &prev)
	if err != nil {
		return s.sessionWrite(op, ev.SessionID, err)
	}
	ev.ID, ev.Prev = id, prev
	return nil
}

// StreamEvents lists a session's events after an id, in id order.
func (s *Store) StreamEvents(ctx context.Context, sessionID string, after int64, limit int) ([]store.StreamEvent, error) {
	const op = "stream events"
	if err := s.ready(op); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = -1
	}
	var out []store.StreamEvent
	err := s.retryRead(ctx, func() error {
		out = nil
		rows, err := s.pool.Query(ctx, `SELECT id, type, turn_id, data FROM stream_events
			WHERE session_id = $1 AND id > $2 ORDER BY id LIMIT NULLIF($3::bigint, -1)`, sessionID, after, int64(limit))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			ev := store.StreamEvent{SessionID: sessionID}
			if err := rows.Scan(&ev.ID, &ev.Type, &ev.TurnID, &ev.Data); err != nil {
				return err
			}
			out = append(out, ev)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return out, nil
}

// LastStreamEventID is the session's largest stream event id so far.
func (s *Store) LastStreamEventID(ctx context.Context, sessionID string) (int64, error) {
	const op = "last stream event"
	if err := s.ready(op); err != nil {
		return 0, err
	}
	var id int64
	err := s.retryRead(ctx, func() error {
		err := s.pool.QueryRow(ctx, `SELECT last_id FROM stream_heads WHERE session_id = $1`, sessionID).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			id = 0
			return nil
		}
		return err
	})
	if err != nil {
		return 0, s.wrap(op, err)
	}
	return id, nil
}

// WatchStreamEvents LISTENs on a connection of its own (taken out of the
// pool) and reports each notified session.
func (s *Store) WatchStreamEvents(ctx context.Context, fn func(sessionID string)) error {
	const op = "watch stream events"
	if err := s.ready(op); err != nil {
		return err
	}
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.wrap(op, err)
	}
	conn := pc.Hijack()
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+streamChannel); err != nil {
		return s.wrap(op, err)
	}
	fn("")
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return s.wrap(op, err)
		}
		fn(n.Payload)
	}
}

// PruneStreamEvents removes events stored before t.
func (s *Store) PruneStreamEvents(ctx context.Context, before time.Time) (int64, error) {
	return s.execN(ctx, "prune stream events", `DELETE FROM stream_events WHERE created_at < $1`, sqlrows.Nanos(before))
}
