package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// maxPrealloc caps the rows Messages allocates up front.
const maxPrealloc = 1 << 20

// admitSQL reserves $1 seqs of live session $3 and stamps updated_at = $2,
// provided $4 is 0 (unfenced) or the session's current, unreleased lease
// token. The lease row is locked FOR SHARE: a takeover (which updates that
// row) waits for this transaction, or, if it committed first, this
// statement sees the new token and refuses. That is what makes the fence
// hold across nodes, in the same transaction as the write.
const admitSQL = `WITH lease AS (
		SELECT 1 FROM leases WHERE session_id = $3 AND token = $4 AND NOT released FOR SHARE)
	UPDATE sessions SET last_seq = last_seq + $1, updated_at = $2
	WHERE id = $3 AND ended_at IS NULL AND ($4 = 0 OR EXISTS (SELECT 1 FROM lease))
	RETURNING last_seq`

const insertSQL = `INSERT INTO messages (session_id, seq, turn_id, role,
	content, text, tool_calls, tool_call_id, tool_name, is_error, reasoning, api_content, display_kind,
	synthetic, archived, finish_reason, input_tokens, output_tokens, cache_read_tokens,
	cache_write_tokens, reasoning_tokens, usage_reported, provider, model, created_at, search)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
		$21, $22, $23, $24, $25, $26::tsvector)
	RETURNING id`

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
// transaction (see store.Messages): appendSQL's reservation update adds
// it, so it costs no extra statement.
func (s *Store) AppendSpend(ctx context.Context, f store.Fence, sp store.Spend, msgs ...*store.Message) error {
	const op = "append"
	if len(msgs) > 0 {
		return s.appendRows(ctx, op, f, msgs, nil, sp)
	}
	if sp.IsZero() {
		return s.ready(op)
	}
	// No rows: appendSQL would return nothing either way, so admit and add
	// in a transaction of their own.
	return s.tx(ctx, op, func(tx pgx.Tx) error {
		if _, err := s.admit(ctx, tx, op, f, 0); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, addUsageSQL, sqlrows.AddUsageArgs(new([10]any), f.SessionID, sp)...)
		return err
	})
}

// Replace archives the session's live rows with Seq <= throughSeq and appends
// msgs after the highest seq ever used, all in one fenced transaction.
func (s *Store) Replace(ctx context.Context, f store.Fence, throughSeq int64, msgs ...*store.Message) error {
	return s.appendRows(ctx, "replace", f, msgs, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE messages SET archived = true
			WHERE session_id = $1 AND seq <= $2 AND NOT archived`, f.SessionID, throughSeq)
		return err
	}, store.Spend{})
}

// SetSystemPrompt replaces the session's prompt and stamp while the stored
// stamp is from, and appends msgs, in one fenced transaction (see
// store.Messages). The admission locks the session row, so the compare
// below sees any rebuild committed before it.
func (s *Store) SetSystemPrompt(ctx context.Context, f store.Fence, from, prompt, stamp string, msgs ...*store.Message) error {
	return s.appendRows(ctx, "set system prompt", f, msgs, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, setPromptSQL, []byte(prompt), stamp, f.SessionID, from)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return store.ErrStampChanged
		}
		return nil
	}, store.Spend{})
}

func (s *Store) appendRows(ctx context.Context, op string, f store.Fence, msgs []*store.Message,
	before func(ctx context.Context, tx pgx.Tx) error, sp store.Spend) error {
	rows, err := s.encode(op, msgs)
	if err != nil {
		return err
	}
	if before == nil {
		// A plain Append: one statement (see appendSQL).
		err = s.appendOne(ctx, op, f, rows, sp)
	} else {
		// Replace: the archive update must see rows committed while this
		// write waited for the session row, so it is a statement of its
		// own after the admission, in one transaction.
		err = s.tx(ctx, op, func(tx pgx.Tx) error {
			first, err := s.admit(ctx, tx, op, f, int64(len(rows)))
			if err != nil {
				return err
			}
			if err := before(ctx, tx); err != nil {
				return err
			}
			return insert(ctx, tx, f.SessionID, first, rows)
		})
	}
	if err != nil {
		return err
	}
	publish(f.SessionID, msgs, rows)
	return nil
}

// publish assigns what the store chose (ID, Seq, SessionID, CreatedAt when
// zero) on the written msgs.
func publish(sessionID string, msgs []*store.Message, rows []row) {
	for i, m := range msgs {
		m.ID, m.Seq, m.SessionID = rows[i].ID, rows[i].Seq, sessionID
		if m.CreatedAt.IsZero() {
			m.CreatedAt = sqlrows.FromNanos(rows[i].CreatedAt)
		}
	}
}

// Delete removes the session's rows with the given IDs, fenced by f. IDs that
// do not exist or belong to another session are ignored.
func (s *Store) Delete(ctx context.Context, f store.Fence, ids ...int64) error {
	const op = "delete"
	if len(ids) == 0 {
		return s.ready(op)
	}
	return s.tx(ctx, op, func(tx pgx.Tx) error {
		if _, err := s.admit(ctx, tx, op, f, 0); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM messages WHERE session_id = $1 AND id = ANY($2)`, f.SessionID, ids)
		return err
	})
}

// admit checks, inside tx, that the session exists and is live and that f
// holds its lease (unless f.Token is 0), and reserves n seqs; it returns the
// first. Only a refusal runs the queries that explain it.
func (s *Store) admit(ctx context.Context, tx pgx.Tx, op string, f store.Fence, n int64) (int64, error) {
	var last int64
	err := tx.QueryRow(ctx, admitSQL, n, sqlrows.Nanos(sqlrows.Now()), f.SessionID, f.Token).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		if err := s.whyNotLive(ctx, tx, op, f.SessionID); err != nil {
			return 0, err
		}
		return 0, s.checkFence(ctx, tx, op, f)
	}
	if err != nil {
		return 0, err
	}
	return last - n + 1, nil
}

// whyNotLive explains a refused reservation: unknown or ended session.
func (s *Store) whyNotLive(ctx context.Context, tx pgx.Tx, op, id string) error {
	return sqlrows.NotLive(tx.QueryRow(ctx, sessionStateSQL, id),
		pgx.ErrNoRows, op, s.name, id)
}

// checkFence explains why f was refused (KindLeaseLost).
func (s *Store) checkFence(ctx context.Context, tx pgx.Tx, op string, f store.Fence) error {
	return sqlrows.Fenced(tx.QueryRow(ctx, leaseStateSQL, f.SessionID),
		pgx.ErrNoRows, op, s.name, f)
}

// row is a message encoded for the insert statement, with its search
// document.
type row struct {
	sqlrows.EncodedMessage
	search string
}

// encode prepares msgs (JSON, search document) before the transaction.
func (s *Store) encode(op string, msgs []*store.Message) ([]row, error) {
	enc, err := sqlrows.Encode(msgs)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	rows := make([]row, len(enc))
	for i := range enc {
		rows[i] = row{EncodedMessage: enc[i], search: document(enc[i].Text)}
	}
	return rows, nil
}

// insertArgs are insertSQL's arguments for r at seq.
func insertArgs(sessionID string, seq int64, r *row) []any {
	m, u := r.M, r.M.Usage
	return []any{sessionID, seq, m.TurnID, string(m.Role), r.Content, nonNil(r.Text),
		r.ToolCalls, m.ToolCallID, m.ToolName, m.IsError, r.Reasoning, nonNil(m.APIContent), string(m.Kind),
		m.Synthetic, m.Archived, string(m.FinishReason),
		u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, u.Reported,
		m.Provider, m.Model, r.CreatedAt, r.search}
}

// nonNil makes an empty payload an empty bytea rather than NULL, for the
// NOT NULL columns.
func nonNil(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return []byte(s)
}

// insert writes rows with consecutive seqs from first, in one batch.
func insert(ctx context.Context, tx pgx.Tx, sessionID string, first int64, rows []row) error {
	if len(rows) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for i := range rows {
		rows[i].Seq = first + int64(i)
		b.Queue(insertSQL, insertArgs(sessionID, rows[i].Seq, &rows[i])...)
	}
	br := tx.SendBatch(ctx, b)
	for i := range rows {
		if err := br.QueryRow().Scan(&rows[i].ID); err != nil {
			_ = br.Close()
			return fmt.Errorf("message %d: %w", i, err)
		}
	}
	return br.Close()
}

// Messages returns a session's rows ordered by Seq; archived rows only with
// q.IncludeArchived. An unknown session is store.ErrNotFound.
func (s *Store) Messages(ctx context.Context, sessionID string, q store.MessageQuery) ([]store.Message, error) {
	const op = "messages"
	if err := s.ready(op); err != nil {
		return nil, err
	}
	var out []store.Message
	err := s.retryRead(ctx, func() error {
		var last int64
		err := s.pool.QueryRow(ctx, `SELECT last_seq FROM sessions WHERE id = $1`, sessionID).Scan(&last)
		if err != nil {
			return err
		}
		var limit *int64 // NULL: no limit
		capacity := max(last-q.AfterSeq, 0)
		if q.Limit > 0 {
			l := int64(q.Limit)
			limit = &l
			capacity = min(capacity, l)
		}
		out, err = s.loadMessages(ctx, sessionID, q, limit, capacity)
		return err
	})
	if err != nil {
		return nil, s.lookup(op, "session "+sessionID, err)
	}
	return out, nil
}

func (s *Store) loadMessages(ctx context.Context, sessionID string, q store.MessageQuery,
	limit *int64, capacity int64) ([]store.Message, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+sqlrows.MessageCols+` FROM messages
		WHERE session_id = $1 AND seq > $2 AND ($3 OR NOT archived) ORDER BY seq LIMIT $4`,
		sessionID, q.AfterSeq, q.IncludeArchived, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]store.Message, 0, min(capacity, maxPrealloc)+int64(max(q.Spare, 0)))
	var raw sqlrows.MessageRow[[]byte, []byte]
	for rows.Next() {
		out = append(out, store.Message{SessionID: sessionID})
		if err := raw.Scan(rows, &out[len(out)-1]); err != nil {
			return nil, err
		}
	}
	return out, rows.Err()
}
