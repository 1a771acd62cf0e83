package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// maxPrealloc caps the rows Messages allocates up front.
const maxPrealloc = 1 << 20

// deleteChunk bounds the parameters of one DELETE … IN (…).
const deleteChunk = 500

// lastSeqSQL reads the highest seq session ?1 ever handed out (see admitSQL).
const lastSeqSQL = `SELECT max(last_seq, coalesce((SELECT max(seq) FROM messages WHERE session_id = ?1), 0))
	FROM sessions WHERE id = ?1`

// Append stores msgs in order in one transaction, fenced by f, and assigns
// ID, Seq, SessionID and CreatedAt (when zero) on the given values once the
// transaction has committed.
func (s *Store) Append(ctx context.Context, f store.Fence, msgs ...*store.Message) error {
	if len(msgs) == 0 {
		return s.ready("append")
	}
	return s.appendRows(ctx, "append", f, msgs, nil, store.Spend{})
}

// AppendSpend is Append that adds sp to the session's counters in the same
// transaction (see store.Messages).
func (s *Store) AppendSpend(ctx context.Context, f store.Fence, sp store.Spend, msgs ...*store.Message) error {
	if len(msgs) == 0 && sp.IsZero() {
		return s.ready("append")
	}
	return s.appendRows(ctx, "append", f, msgs, nil, sp)
}

// Replace archives the session's live rows with Seq <= throughSeq and appends
// msgs after the highest seq ever used, all in one fenced transaction.
func (s *Store) Replace(ctx context.Context, f store.Fence, throughSeq int64, msgs ...*store.Message) error {
	return s.appendRows(ctx, "replace", f, msgs, func(ctx context.Context, tx *wtx) error {
		_, err := tx.ExecContext(ctx, `UPDATE messages SET archived = 1
			WHERE session_id = ? AND seq <= ? AND archived = 0`, f.SessionID, throughSeq)
		return err
	}, store.Spend{})
}

// SetSystemPrompt replaces the session's prompt and stamp while the stored
// stamp is from, and appends msgs, in one fenced transaction (see
// store.Messages).
func (s *Store) SetSystemPrompt(ctx context.Context, f store.Fence, from, prompt, stamp string, msgs ...*store.Message) error {
	return s.appendRows(ctx, "set system prompt", f, msgs, func(ctx context.Context, tx *wtx) error {
		res, err := tx.ExecContext(ctx, sqlrows.SetPromptSQL, prompt, stamp, f.SessionID, from)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return cmp.Or(err, store.ErrStampChanged)
		}
		return nil
	}, store.Spend{})
}

// appendRows is Append, AppendSpend, Replace and SetSystemPrompt: admit, then before (when
// not nil), then the inserts and the spend, in one transaction.
func (s *Store) appendRows(ctx context.Context, op string, f store.Fence, msgs []*store.Message,
	before func(ctx context.Context, tx *wtx) error, sp store.Spend) error {
	rows, err := sqlrows.Encode(msgs)
	if err != nil {
		return s.wrap(op, err)
	}
	err = s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		first, err := s.admit(ctx, tx, op, f)
		if err != nil {
			return err
		}
		if before != nil {
			if err := before(ctx, tx); err != nil {
				return err
			}
		}
		if !sp.IsZero() {
			if _, err := tx.spend.ExecContext(ctx, sqlrows.AddUsageArgs(new([10]any), f.SessionID, sp)...); err != nil {
				return err
			}
		}
		if len(rows) == 0 {
			return nil
		}
		if err := s.insert(ctx, tx, f.SessionID, first, rows); err != nil {
			return err
		}
		return s.maybeIndex(ctx, tx, rows[len(rows)-1].ID)
	})
	if err != nil {
		return err
	}
	sqlrows.Publish(f.SessionID, msgs, rows)
	return nil
}

// Delete removes the session's rows with the given IDs, fenced by f. IDs that
// do not exist or belong to another session are ignored. Seqs of deleted rows
// are never handed out again.
func (s *Store) Delete(ctx context.Context, f store.Fence, ids ...int64) error {
	const op = "delete"
	if len(ids) == 0 {
		return s.ready(op)
	}
	return s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		if _, err := s.admit(ctx, tx, op, f); err != nil {
			return err
		}
		// last_seq keeps the highest seq handed out, so deleting the last
		// rows does not let their seqs come back.
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET last_seq = max(last_seq,
			coalesce((SELECT max(seq) FROM messages WHERE session_id = ?1), 0)) WHERE id = ?1`, f.SessionID); err != nil {
			return err
		}
		for start := 0; start < len(ids); start += deleteChunk {
			chunk := ids[start:min(start+deleteChunk, len(ids))]
			args := make([]any, 0, len(chunk)+1)
			args = append(args, f.SessionID)
			for _, id := range chunk {
				args = append(args, id)
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE session_id = ? AND id IN (`+
				placeholders(len(chunk))+`)`, args...); err != nil {
				return err
			}
		}
		return nil
	})
}

// admit checks, inside tx, that the session exists and is live and that f is
// its current lease (unless f.Token is 0), and returns the first seq free
// for its rows (inserted within tx, which holds the write lock, so no other
// writer can take the same seqs). The happy path is one read; only a
// refusal runs the queries that explain it.
func (s *Store) admit(ctx context.Context, tx *wtx, op string, f store.Fence) (int64, error) {
	var last int64
	err := tx.admit.QueryRowContext(ctx, f.SessionID, f.Token).Scan(&last)
	if errors.Is(err, sql.ErrNoRows) {
		if err := s.whyNotLive(ctx, tx, op, f.SessionID); err != nil {
			return 0, err
		}
		return 0, s.checkFence(ctx, tx, op, f)
	}
	if err != nil {
		return 0, err
	}
	return last + 1, nil
}

// whyNotLive explains a failed admission: unknown or ended session.
func (s *Store) whyNotLive(ctx context.Context, tx *wtx, op, id string) error {
	return sqlrows.NotLive(tx.QueryRowContext(ctx, sqlrows.SessionStateSQL, id),
		sql.ErrNoRows, op, s.path, id)
}

// checkFence explains why f was refused (KindLeaseLost).
func (s *Store) checkFence(ctx context.Context, tx *wtx, op string, f store.Fence) error {
	return sqlrows.Fenced(tx.QueryRowContext(ctx, sqlrows.LeaseStateSQL, f.SessionID),
		sql.ErrNoRows, op, s.path, f)
}

// insert writes rows with consecutive seqs from first.
func (s *Store) insert(ctx context.Context, tx *wtx, sessionID string, first int64, rows []sqlrows.EncodedMessage) error {
	for i := range rows {
		r := &rows[i]
		m := r.M
		u := m.Usage
		r.Seq = first + int64(i)
		res, err := tx.insert.ExecContext(ctx, sessionID, r.Seq, m.TurnID, string(m.Role), jsonText(r.Content), r.Text,
			jsonText(r.ToolCalls), m.ToolCallID, m.ToolName, m.IsError, jsonText(r.Reasoning), m.APIContent, string(m.Kind),
			m.Synthetic, m.Archived, string(m.FinishReason),
			u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, u.Reported,
			m.Provider, m.Model, r.CreatedAt)
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		if r.ID, err = res.LastInsertId(); err != nil {
			return err
		}
	}
	return nil
}

// jsonText binds an encoded JSON column as TEXT (a []byte would be a BLOB),
// nil as NULL.
func jsonText(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// Messages returns a session's rows ordered by Seq; archived rows only with
// q.IncludeArchived. An unknown session is store.ErrNotFound.
func (s *Store) Messages(ctx context.Context, sessionID string, q store.MessageQuery) ([]store.Message, error) {
	const op = "messages"
	if err := s.ready(op); err != nil {
		return nil, err
	}
	// The session's last seq both proves it exists and bounds the row
	// count, so the result is allocated once instead of grown.
	var last int64
	err := s.r.QueryRowContext(ctx, lastSeqSQL, sessionID).Scan(&last)
	if err != nil {
		return nil, s.lookup(op, "session "+sessionID, err)
	}
	limit := int64(-1) // SQLite: no limit
	capacity := max(last-q.AfterSeq, 0)
	if q.Limit > 0 {
		limit = int64(q.Limit)
		capacity = min(capacity, limit)
	}
	out, err := s.loadMessages(ctx, sessionID, q, limit, capacity)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return out, nil
}

// loadMessages runs the load statement; capacity sizes the result.
func (s *Store) loadMessages(ctx context.Context, sessionID string, q store.MessageQuery,
	limit, capacity int64) ([]store.Message, error) {
	rows, err := s.st.load.QueryContext(ctx, sessionID, q.AfterSeq, q.IncludeArchived, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]store.Message, 0, min(capacity, maxPrealloc)+int64(max(q.Spare, 0)))
	var raw loadRow // scanned in place, decoded at once
	for rows.Next() {
		out = append(out, store.Message{SessionID: sessionID})
		if err := raw.scan(rows, &out[len(out)-1]); err != nil {
			return nil, err
		}
	}
	return out, rows.Err()
}
