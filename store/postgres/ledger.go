package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// toolStartedSQL records a started call in one statement, only while $6
// is the session's live lease token (or $6 is 0).
const toolStartedSQL = `WITH lease AS (
		SELECT 1 FROM leases WHERE session_id = $1 AND token = $6 AND NOT released FOR SHARE)
	INSERT INTO tool_calls (session_id, call_id, turn_id, tool, node, fence, args_hash, state, path, before_hash, started_at)
	SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11 WHERE $6 = 0 OR EXISTS (SELECT 1 FROM lease)
	ON CONFLICT (session_id, call_id) DO UPDATE SET turn_id = excluded.turn_id, tool = excluded.tool,
		node = excluded.node, fence = excluded.fence, args_hash = excluded.args_hash, state = excluded.state,
		result_id = 0, is_error = false, path = excluded.path, before_hash = excluded.before_hash, after_hash = '',
		started_at = excluded.started_at, finished_at = 0`

// ToolStarted records a call as started, fenced by the session's lease.
func (s *Store) ToolStarted(ctx context.Context, rec *store.ToolCallRecord) error {
	const op = "tool started"
	if err := s.ready(op); err != nil {
		return err
	}
	rec.StartedAt = sqlrows.OrNow(rec.StartedAt)
	tag, err := s.pool.Exec(ctx, toolStartedSQL, sqlrows.ToolStartedArgs(new([11]any), rec)...)
	if err != nil {
		return s.sessionWrite(op, rec.SessionID, err)
	}
	if tag.RowsAffected() == 0 {
		return s.tx(ctx, op, func(tx pgx.Tx) error {
			return s.checkFence(ctx, tx, op, store.Fence{SessionID: rec.SessionID, Token: rec.Fence})
		})
	}
	rec.State = store.ToolCallStarted
	return nil
}

// ToolFinished marks a call finished (recording it whole when it was
// never started).
func (s *Store) ToolFinished(ctx context.Context, rec *store.ToolCallRecord) error {
	const op = "tool finished"
	if err := s.ready(op); err != nil {
		return err
	}
	rec.FillFinished(sqlrows.Now())
	_, err := s.pool.Exec(ctx, `INSERT INTO tool_calls
		(session_id, call_id, turn_id, tool, node, fence, args_hash, state, result_id, is_error, path, before_hash,
		 after_hash, started_at, finished_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
		ON CONFLICT (session_id, call_id) DO UPDATE SET state = excluded.state, result_id = excluded.result_id,
			is_error = excluded.is_error, after_hash = excluded.after_hash, finished_at = excluded.finished_at`,
		sqlrows.ToolFinishedArgs(new([15]any), rec)...)
	if err != nil {
		return s.sessionWrite(op, rec.SessionID, err)
	}
	rec.State = store.ToolCallFinished
	return nil
}

// ToolCalls lists a session's ledger records (one turn's when turnID is
// set) in the order they were first started.
func (s *Store) ToolCalls(ctx context.Context, sessionID, turnID string) ([]store.ToolCallRecord, error) {
	return list(ctx, s, "tool calls", sqlrows.ScanToolCall, `SELECT `+sqlrows.ToolCallCols+`
		FROM tool_calls WHERE session_id = $1 AND ($2 = '' OR turn_id = $2) ORDER BY ord`, sessionID, turnID)
}
