package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// LastSeq is the highest seq the session ever handed out.
func (s *Store) LastSeq(ctx context.Context, id string) (int64, error) {
	const op = "last seq"
	if err := s.ready(op); err != nil {
		return 0, err
	}
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT last_seq FROM sessions WHERE id = $1`, id).Scan(&n)
	return n, s.lookup(op, "session "+id, err)
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
	ended := sqlrows.NullNanos(sess.EndedAt)
	err = s.tx(ctx, op, func(tx pgx.Tx) error {
		u := sess.Usage
		tag, err := tx.Exec(ctx, `INSERT INTO sessions (id, title, provider, model, parent_session_id, end_reason,
			system_prompt, cwd, started_at, updated_at, ended_at,
			input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, usage_reported,
			cost_usd, api_calls, last_seq, principal, kind, prompt_stamp, prompt_extra)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)
			ON CONFLICT (id) DO NOTHING`,
			sess.ID, sess.Title, sess.Provider, sess.Model, sess.ParentID, sess.EndReason,
			[]byte(sess.SystemPrompt), sess.Cwd, sqlrows.Nanos(sess.StartedAt), sqlrows.Nanos(sess.UpdatedAt), ended,
			u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, u.Reported,
			sess.CostUSD, sess.APICalls, lastSeq, sess.Principal, sess.Kind, sess.PromptStamp, []byte(sess.PromptExtra))
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		created = true
		b := &pgx.Batch{}
		for i := range rows {
			b.Queue(insertSQL, insertArgs(sess.ID, rows[i].M.Seq, &rows[i])...)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	return created, err
}
