package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// defaultListLimit is the page size when ListOptions.Limit is 0.
const defaultListLimit = 50

// sessionCols is the column list sqlrows.ScanSession reads. An append
// does not write the session row (schema migration 6), so UpdatedAt is the
// newer of updated_at (creation, title, usage, end) and the creation time
// of the session's last row; listings sort by it as last_active.
const sessionCols = sqlrows.SessionColsHead + `max(updated_at, coalesce((SELECT created_at FROM messages m
		WHERE m.session_id = sessions.id ORDER BY seq DESC LIMIT 1), 0)) AS last_active` + sqlrows.SessionColsTail

// errIDTaken is a generated session id that is already in use.
var errIDTaken = errors.New("session id taken")

// idAttempts bounds the fresh ids CreateSession draws after a collision.
const idAttempts = 5

// CreateSession inserts sess. It fills ID (store.NewID) when empty and
// StartedAt/UpdatedAt when zero, on the given value. A session created with
// EndedAt set starts ended. Creating an existing id fails; a generated id
// that is taken is replaced by a fresh one.
func (s *Store) CreateSession(ctx context.Context, sess *store.Session) error {
	if sess.ID != "" {
		return s.createSession(ctx, sess, false)
	}
	var err error
	for range idAttempts {
		sess.ID = s.idFunc()(sqlrows.Now())
		if err = s.createSession(ctx, sess, true); !errors.Is(err, errIDTaken) {
			return err
		}
	}
	sess.ID = ""
	return s.wrap("create session", err)
}

func (s *Store) idFunc() func(time.Time) string {
	if s.newID != nil {
		return s.newID
	}
	return store.NewID
}

func (s *Store) createSession(ctx context.Context, sess *store.Session, generated bool) error {
	const op = "create session"
	t := sqlrows.Now()
	if sess.StartedAt.IsZero() {
		sess.StartedAt = t
	}
	if sess.UpdatedAt.IsZero() {
		sess.UpdatedAt = sess.StartedAt
	}
	var ended sql.NullInt64
	if !sess.EndedAt.IsZero() {
		ended = sql.NullInt64{Int64: sess.EndedAt.UnixNano(), Valid: true}
	}
	return s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		var exists int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, sess.ID).Scan(&exists)
		if err == nil {
			if generated {
				return errIDTaken
			}
			return fmt.Errorf("session %s already exists", sess.ID)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		u := sess.Usage
		_, err = tx.ExecContext(ctx, `INSERT INTO sessions (id, title, provider, model, parent_session_id, kind, end_reason,
			system_prompt, cwd, started_at, updated_at, ended_at,
			input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, usage_reported,
			cost_usd, api_calls, principal, prompt_stamp, prompt_extra)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			sess.ID, sess.Title, sess.Provider, sess.Model, sess.ParentID, sess.Kind, sess.EndReason,
			sess.SystemPrompt, sess.Cwd, sqlrows.Nanos(sess.StartedAt), sqlrows.Nanos(sess.UpdatedAt), ended,
			u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, u.Reported,
			sess.CostUSD, sess.APICalls, sess.Principal, sess.PromptStamp, sess.PromptExtra)
		return err
	})
}

// GetSession returns one session; an unknown id is store.ErrNotFound.
func (s *Store) GetSession(ctx context.Context, id string) (*store.Session, error) {
	return get(ctx, s, s.r, "get session", "session "+id, sqlrows.ScanSession,
		`SELECT `+sessionCols+` FROM sessions WHERE id = ?`, id)
}

// ListSessions lists sessions newest first by UpdatedAt.
func (s *Store) ListSessions(ctx context.Context, opt store.ListOptions) ([]store.Session, error) {
	limit := opt.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	if opt.Principal != "" {
		return list(ctx, s, "list sessions", sqlrows.ScanSession,
			`SELECT `+sessionCols+` FROM sessions WHERE principal = ? ORDER BY last_active DESC, id DESC LIMIT ? OFFSET ?`,
			opt.Principal, limit, max(opt.Offset, 0))
	}
	return list(ctx, s, "list sessions", sqlrows.ScanSession,
		`SELECT `+sessionCols+` FROM sessions ORDER BY last_active DESC, id DESC LIMIT ? OFFSET ?`,
		limit, max(opt.Offset, 0))
}

// ChildSessions lists sessions whose ParentID is id, oldest first.
func (s *Store) ChildSessions(ctx context.Context, id string) ([]store.Session, error) {
	if id == "" {
		return nil, nil // "" is "no parent", not a parent
	}
	return list(ctx, s, "child sessions", sqlrows.ScanSession,
		`SELECT `+sessionCols+` FROM sessions WHERE parent_session_id = ? ORDER BY started_at, id`, id)
}

// EndSession marks a session ended with reason. Ending an ended session is a
// no-op that keeps the first reason and time.
func (s *Store) EndSession(ctx context.Context, id, reason string) error {
	const op = "end session"
	t := sqlrows.Nanos(sqlrows.Now())
	return s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		n, err := affected(tx.ExecContext(ctx, `UPDATE sessions SET ended_at = ?, end_reason = ?, updated_at = ?
			WHERE id = ? AND ended_at IS NULL`, t, reason, t, id))
		if err != nil || n > 0 {
			return err
		}
		return s.mustExist(ctx, tx, op, id)
	})
}

// DeleteSession removes a session with its messages (and their search
// entries) and its lease. Child sessions keep their ParentID.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	const op = "delete session"
	return s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		// Explicit deletes (not only ON DELETE CASCADE) keep the FTS triggers
		// obviously in play and work even if foreign keys were off.
		for _, q := range []string{
			`DELETE FROM messages WHERE session_id = ?`,
			`DELETE FROM leases WHERE session_id = ?`,
			`DELETE FROM queue WHERE session_id = ?`,
			`DELETE FROM turn_events WHERE session_id = ?`,
			`DELETE FROM tool_calls WHERE session_id = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, id); err != nil {
				return err
			}
		}
		return execOne(ctx, tx, func() error { return s.notFound(op, "session "+id) }, `DELETE FROM sessions WHERE id = ?`, id)
	})
}

// mustExist returns a not-found error unless session id exists.
func (s *Store) mustExist(ctx context.Context, tx *wtx, op, id string) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return s.notFound(op, "session "+id)
	}
	return err
}

// placeholders returns "?, ?, …" for n parameters.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// SessionModels reads the provider/model pairs of ids' rows, through the
// (session_id, seq) index: a listing's page of sessions, not GetSession.
func (s *Store) SessionModels(ctx context.Context, ids []string) (map[string][]store.ModelUse, error) {
	const op = "session models"
	if err := s.ready(op); err != nil {
		return nil, err
	}
	out := map[string][]store.ModelUse{}
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), deleteChunk)]
		ids = ids[len(chunk):]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := s.r.QueryContext(ctx, `SELECT session_id, provider, model, MIN(seq) AS first FROM messages
			WHERE session_id IN (`+placeholders(len(chunk))+`) AND model <> ''
			GROUP BY session_id, provider, model ORDER BY session_id, first`, args...)
		if err != nil {
			return nil, s.wrap(op, err)
		}
		for rows.Next() {
			var id string
			var u store.ModelUse
			var first int64
			if err := rows.Scan(&id, &u.Provider, &u.Model, &first); err != nil {
				_ = rows.Close()
				return nil, s.wrap(op, err)
			}
			out[id] = append(out[id], u)
		}
		err = rows.Err()
		_ = rows.Close()
		if err != nil {
			return nil, s.wrap(op, err)
		}
	}
	return out, nil
}
