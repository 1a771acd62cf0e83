package sqlite

import (
	"context"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// ToolStarted records a call as started, fenced by the session's lease,
// in one statement; only a refusal reads more to explain itself.
func (s *Store) ToolStarted(ctx context.Context, rec *store.ToolCallRecord) error {
	const op = "tool started"
	rec.StartedAt = sqlrows.OrNow(rec.StartedAt)
	return s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		// ord: the first start's time; a re-run keeps its place.
		n, err := affected(tx.ExecContext(ctx, `INSERT INTO tool_calls
			(session_id, call_id, turn_id, tool, node, fence, args_hash, state, path, before_hash, started_at, ord)
			SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11
			WHERE EXISTS (SELECT 1 FROM sessions WHERE id = ?1)
				AND (?6 = 0 OR EXISTS (SELECT 1 FROM leases WHERE session_id = ?1 AND token = ?6 AND NOT released))
			ON CONFLICT (session_id, call_id) DO UPDATE SET turn_id = excluded.turn_id, tool = excluded.tool,
				node = excluded.node, fence = excluded.fence, args_hash = excluded.args_hash, state = excluded.state,
				result_id = 0, is_error = 0, path = excluded.path, before_hash = excluded.before_hash, after_hash = '',
				started_at = excluded.started_at, finished_at = 0`,
			sqlrows.ToolStartedArgs(new([11]any), rec)...))
		if err != nil {
			return err
		}
		if n > 0 {
			rec.State = store.ToolCallStarted
			return nil
		}
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, rec.SessionID).Scan(&one); err != nil {
			return s.notFound(op, "session "+rec.SessionID)
		}
		return s.checkFence(ctx, tx, op, store.Fence{SessionID: rec.SessionID, Token: rec.Fence})
	})
}

// ToolFinished marks a call finished (recording it whole when it was
// never started).
func (s *Store) ToolFinished(ctx context.Context, rec *store.ToolCallRecord) error {
	const op = "tool finished"
	rec.FillFinished(sqlrows.Now())
	return s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		err := execOne(ctx, tx, func() error { return s.notFound(op, "session "+rec.SessionID) }, `INSERT INTO tool_calls
			(session_id, call_id, turn_id, tool, node, fence, args_hash, state, result_id, is_error, path, before_hash,
			 after_hash, started_at, finished_at, ord)
			SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?14
			WHERE EXISTS (SELECT 1 FROM sessions WHERE id = ?1)
			ON CONFLICT (session_id, call_id) DO UPDATE SET state = excluded.state, result_id = excluded.result_id,
				is_error = excluded.is_error, after_hash = excluded.after_hash, finished_at = excluded.finished_at`,
			sqlrows.ToolFinishedArgs(new([15]any), rec)...)
		if err == nil {
			rec.State = store.ToolCallFinished
		}
		return err
	})
}

// ToolCalls lists a session's ledger records (one turn's when turnID is
// set) in the order they were first started.
func (s *Store) ToolCalls(ctx context.Context, sessionID, turnID string) ([]store.ToolCallRecord, error) {
	return list(ctx, s, "tool calls", sqlrows.ScanToolCall, `SELECT `+sqlrows.ToolCallCols+`
		FROM tool_calls WHERE session_id = ? AND (? = '' OR turn_id = ?) ORDER BY ord, call_id`, sessionID, turnID, turnID)
}
