package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/talaria-agent/talaria/store"
)

// AllCooldowns lists every stored cooldown, expired ones too (for
// verifying a copy).
func (s *Store) AllCooldowns(ctx context.Context) ([]store.Cooldown, error) {
	const op = "all cooldowns"
	if err := s.ready(op); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT provider, base_url, key_id, until, reason, set_at FROM cooldowns
		ORDER BY provider, base_url, key_id`)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	defer rows.Close()
	var out []store.Cooldown
	for rows.Next() {
		var (
			c            store.Cooldown
			until, setAt int64
		)
		if err := rows.Scan(&c.Provider, &c.BaseURL, &c.KeyID, &until, &c.Reason, &setAt); err != nil {
			return nil, s.wrap(op, err)
		}
		c.Until, c.SetAt = fromNanos(until), fromNanos(setAt)
		out = append(out, c)
	}
	return out, s.wrap(op, rows.Err())
}

// LastSeq is the highest seq the session ever handed out.
func (s *Store) LastSeq(ctx context.Context, id string) (int64, error) {
	const op = "last seq"
	if err := s.ready(op); err != nil {
		return 0, err
	}
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT last_seq FROM sessions WHERE id = $1`, id).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, s.notFound(op, "session "+id)
	}
	return n, s.wrap(op, err)
}

// ImportSession writes a session copied from another database exactly as
// it was: every field, its messages with their seqs, times and archive
// flags, and its last seq, in one transaction. A session that already
// exists is left alone and reported with created false.
func (s *Store) ImportSession(ctx context.Context, sess store.Session, lastSeq int64, msgs []store.Message) (created bool, err error) {
	const op = "import session"
	ptrs := make([]*store.Message, len(msgs))
	for i := range msgs {
		ptrs[i] = &msgs[i]
		lastSeq = max(lastSeq, msgs[i].Seq)
	}
	rows, err := s.encode(op, ptrs)
	if err != nil {
		return false, err
	}
	var ended *int64
	if !sess.EndedAt.IsZero() {
		n := sess.EndedAt.UnixNano()
		ended = &n
	}
	err = s.tx(ctx, op, func(tx pgx.Tx) error {
		u := sess.Usage
		tag, err := tx.Exec(ctx, `INSERT INTO sessions (id, title, provider, model, parent_session_id, end_reason,
			system_prompt, cwd, started_at, updated_at, ended_at,
			input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, usage_reported,
			cost_usd, api_calls, last_seq, principal, kind)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)
			ON CONFLICT (id) DO NOTHING`,
			sess.ID, sess.Title, sess.Provider, sess.Model, sess.ParentID, sess.EndReason,
			[]byte(sess.SystemPrompt), sess.Cwd, nanos(sess.StartedAt), nanos(sess.UpdatedAt), ended,
			u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, u.Reported,
			sess.CostUSD, sess.APICalls, lastSeq, sess.Principal, sess.Kind)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		created = true
		b := &pgx.Batch{}
		for i := range rows {
			r := &rows[i]
			m := r.m
			u := m.Usage
			b.Queue(insertSQL, sess.ID, m.Seq, m.TurnID, string(m.Role), r.content, nonNil(r.text),
				r.toolCalls, m.ToolCallID, m.ToolName, m.IsError, r.reasoning, nonNil(m.APIContent), string(m.Kind),
				m.Synthetic, m.Archived, string(m.FinishReason),
				u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, u.Reported,
				m.Provider, m.Model, r.createdAt, r.search)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	return created, err
}
