package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// wtx is the open write transaction handed to write's callback: the writer
// connection (BEGIN IMMEDIATE already run) with its hot-path statements.
type wtx struct {
	*sql.Conn
	// begin, commit and rollback are prepared once: an unprepared
	// statement is parsed and compiled again on every transaction.
	begin, commit, rollback *sql.Stmt
	admit                   *sql.Stmt // live session + fence check + seq reservation
	insert                  *sql.Stmt // one message row
	spend                   *sql.Stmt // AppendSpend's counters (sqlrows.AddUsageSQL)
}

// admitSQL is the whole admission of a write, and only reads: session ?1
// exists and is live, and ?2 is 0 (unfenced) or exactly its current,
// unreleased lease token. It returns the session's last seq: the highest
// of its rows' and of last_seq, the floor Delete leaves so that a deleted
// row's seq is never handed out again (schema migration 6). No row is
// written, so an append's commit holds only the pages of its own rows.
const admitSQL = `SELECT max(s.last_seq, coalesce((SELECT max(seq) FROM messages WHERE session_id = ?1), 0))
	FROM sessions s WHERE s.id = ?1 AND s.ended_at IS NULL
	AND (?2 = 0 OR EXISTS (SELECT 1 FROM leases WHERE session_id = ?1 AND token = ?2 AND released = 0))`

// insertSQL inserts one message. Its id is one above both the highest id
// and fts_state.id_floor (the highest id ever deleted), so an id is never
// reused without AUTOINCREMENT's per-insert write (migration 6).
const insertSQL = `INSERT INTO messages (id, session_id, seq, turn_id, role,
	content, text, tool_calls, tool_call_id, tool_name, is_error, reasoning, api_content, display_kind,
	synthetic, archived, finish_reason, input_tokens, output_tokens, cache_read_tokens,
	cache_write_tokens, reasoning_tokens, usage_reported, provider, model, created_at)
	VALUES ((SELECT max(coalesce((SELECT max(id) FROM messages), 0), id_floor) + 1 FROM fts_state),
	?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// write runs fn in one BEGIN IMMEDIATE transaction on the writer connection.
//
// Transactions are issued on a held *sql.Conn rather than through sql.Tx,
// and ctx only bounds the waits (for the connection and for another
// process's write lock, see begin): the statements run under a context
// without cancellation, and ctx is checked again before COMMIT. Given a
// cancellable context the driver arms an interrupt watcher for every
// statement, which costs more than the short statements themselves. A
// cancelled write is still rolled back whole.
func (s *Store) write(ctx context.Context, op string, fn func(ctx context.Context, tx *wtx) error) error {
	if err := s.ready(op); err != nil {
		return err
	}
	if s.readOnly {
		return &store.Error{Op: op, Kind: store.KindReadOnly, Path: s.path, Err: errReadOnly}
	}
	select {
	case s.wmu <- struct{}{}:
	case <-ctx.Done():
		return s.wrap(op, ctx.Err())
	}
	defer func() { <-s.wmu }()
	if err := s.ready(op); err != nil { // closed while waiting
		return err
	}
	tx, err := s.writer(ctx)
	if err != nil {
		return s.wrap(op, err)
	}
	bg := context.WithoutCancel(ctx)
	if err := s.begin(ctx, bg, tx); err != nil {
		if isBadConn(err) {
			s.dropWriter()
		}
		return s.wrap(op, err)
	}
	err = fn(bg, tx)
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		if _, err = tx.commit.ExecContext(bg); err == nil {
			s.cp.committed()
			return nil
		}
	}
	// SQLite rolls back by itself after some errors (disk full, I/O); a
	// failing ROLLBACK then is expected, but the connection state is no
	// longer certain, so start over with a fresh one.
	if _, rerr := tx.rollback.ExecContext(bg); rerr != nil {
		s.dropWriter()
	}
	return s.wrap(op, err)
}

// begin starts the write transaction. The connection's busy_timeout is 0:
// waiting for another process's write lock happens here, with backoff, so
// that ctx can end the wait without an interrupt watcher on the fast path.
// After s.busy it gives up with SQLITE_BUSY (store.KindLocked).
func (s *Store) begin(ctx, bg context.Context, tx *wtx) error {
	deadline := time.Now().Add(s.busy)
	delay := time.Millisecond
	for {
		_, err := tx.begin.ExecContext(bg)
		if err == nil || !isBusy(err) || !time.Now().Before(deadline) {
			return err
		}
		t := time.NewTimer(min(delay, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for the write lock: %w", ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, maxBusyDelay)
	}
}

// maxBusyDelay caps the backoff between attempts to take the write lock.
const maxBusyDelay = 50 * time.Millisecond

// isBusy reports whether err is SQLite's "locked by another connection".
func isBusy(err error) bool {
	var c coder
	return errors.As(err, &c) && (c.Code()&0xff == codeBusy || c.Code()&0xff == codeLocked)
}

// writer returns the writer connection, opening it (and preparing its
// statements) when there is none. Called with wmu held.
func (s *Store) writer(ctx context.Context) (*wtx, error) {
	if s.wc != nil {
		return s.wc, nil
	}
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return nil, err
	}
	tx := &wtx{Conn: conn}
	// begin waits for the write lock itself; see there.
	_, err = conn.ExecContext(ctx, `PRAGMA busy_timeout = 0`)
	if err == nil {
		_, err = conn.ExecContext(ctx, fallbackPragma) // see checkpoint.go
	}
	for _, p := range []struct {
		st  **sql.Stmt
		sql string
	}{{&tx.begin, `BEGIN IMMEDIATE`}, {&tx.commit, `COMMIT`}, {&tx.rollback, `ROLLBACK`}} {
		if err == nil {
			*p.st, err = conn.PrepareContext(ctx, p.sql)
		}
	}
	if err == nil {
		tx.admit, err = conn.PrepareContext(ctx, admitSQL)
	}
	if err == nil {
		tx.insert, err = conn.PrepareContext(ctx, insertSQL)
	}
	if err == nil {
		tx.spend, err = conn.PrepareContext(ctx, sqlrows.AddUsageSQL)
	}
	if err != nil {
		closeWriter(tx, true)
		return nil, err
	}
	s.wc = tx
	return tx, nil
}

// dropWriter discards the writer connection so the next write opens a new
// one. Called with wmu held.
func (s *Store) dropWriter() {
	if s.wc != nil {
		closeWriter(s.wc, true)
		s.wc = nil
	}
}

// closeWriter closes tx's statements and gives its connection back to the
// pool, or, when discard is set, makes the pool close it.
func closeWriter(tx *wtx, discard bool) {
	for _, st := range []*sql.Stmt{tx.begin, tx.commit, tx.rollback, tx.admit, tx.insert, tx.spend} {
		if st != nil {
			_ = st.Close() // fails only on a dead connection, which is going anyway
		}
	}
	if discard {
		_ = tx.Raw(func(any) error { return driver.ErrBadConn })
	}
	_ = tx.Close()
}

// isBadConn reports whether err means the connection itself is unusable.
func isBadConn(err error) bool {
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone)
}

// execOne runs one statement in tx that must touch a row; when it touches
// none, the write fails with missing.
func execOne(ctx context.Context, tx *wtx, missing func() error, query string, args ...any) error {
	n, err := affected(tx.ExecContext(ctx, query, args...))
	if err == nil && n == 0 {
		return missing()
	}
	return err
}

// affected is the row count of an Exec's result.
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
