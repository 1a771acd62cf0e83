package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// defaultListLimit is the page size when ListOptions.Limit is 0.
const defaultListLimit = 50

// sessionCols is the column list sqlrows.ScanSession reads.
const sessionCols = sqlrows.SessionColsHead + `updated_at` + sqlrows.SessionColsTail

// CreateSession inserts sess. It fills ID (store.NewID) when empty and
// StartedAt/UpdatedAt when zero, on the given value. A session created with
// EndedAt set starts ended. Creating an existing id fails.
func (s *Store) CreateSession(ctx context.Context, sess *store.Session) error {
	const op = "create session"
	if err := s.ready(op); err != nil {
		return err
	}
	t := sqlrows.Now()
	id, started, updated := sess.ID, sess.StartedAt, sess.UpdatedAt
	generated := id == ""
	if generated {
		id = store.NewID(t)
	}
	if started.IsZero() {
		started = t
	}
	if updated.IsZero() {
		updated = started
	}
	ended := sqlrows.NullNanos(sess.EndedAt)
	u := sess.Usage
	// A generated id that is taken is replaced by a fresh one (as in
	// store/sqlite); an id the caller chose is an error.
	var err error
	for attempt := 0; ; attempt++ {
		_, err = s.pool.Exec(ctx, `INSERT INTO sessions (id, title, provider, model, parent_session_id, end_reason,
		system_prompt, cwd, started_at, updated_at, ended_at,
		input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, usage_reported,
		cost_usd, api_calls, principal, kind, prompt_stamp, prompt_extra)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)`,
			id, sess.Title, sess.Provider, sess.Model, sess.ParentID, sess.EndReason,
			[]byte(sess.SystemPrompt), sess.Cwd, sqlrows.Nanos(started), sqlrows.Nanos(updated), ended,
			u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, u.Reported,
			sess.CostUSD, sess.APICalls, sess.Principal, sess.Kind, sess.PromptStamp, []byte(sess.PromptExtra))
		var pe *pgconn.PgError
		if !generated || attempt >= 4 || !errors.As(err, &pe) || pe.Code != "23505" {
			break
		}
		id = store.NewID(sqlrows.Now())
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return s.wrap(op, fmt.Errorf("session %s already exists", id))
	}
	if err != nil {
		return s.wrap(op, err)
	}
	sess.ID, sess.StartedAt, sess.UpdatedAt = id, started, updated
	return nil
}

// GetSession returns one session; an unknown id is store.ErrNotFound.
func (s *Store) GetSession(ctx context.Context, id string) (*store.Session, error) {
	return get(ctx, s, "get session", "session "+id, sqlrows.ScanSession,
		`SELECT `+sessionCols+` FROM sessions WHERE id = $1`, id)
}

// ListSessions lists sessions newest first by UpdatedAt.
func (s *Store) ListSessions(ctx context.Context, opt store.ListOptions) ([]store.Session, error) {
	limit := opt.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	return s.querySessions(ctx, "list sessions",
		`SELECT `+sessionCols+` FROM sessions WHERE ($3 = '' OR principal = $3)
		ORDER BY updated_at DESC, id DESC LIMIT $1 OFFSET $2`,
		limit, max(opt.Offset, 0), opt.Principal)
}

// ChildSessions lists sessions whose ParentID is id, oldest first.
func (s *Store) ChildSessions(ctx context.Context, id string) ([]store.Session, error) {
	if id == "" {
		return nil, nil // "" is "no parent", not a parent
	}
	return s.querySessions(ctx, "child sessions",
		`SELECT `+sessionCols+` FROM sessions WHERE parent_session_id = $1 ORDER BY started_at, id`, id)
}

func (s *Store) querySessions(ctx context.Context, op, query string, args ...any) ([]store.Session, error) {
	var out []store.Session
	err := s.retryRead(ctx, func() (err error) {
		out, err = list(ctx, s, op, sqlrows.ScanSession, query, args...)
		return err
	})
	return out, err
}

// EndSession marks a session ended with reason. Ending an ended session is a
// no-op that keeps the first reason and time.
func (s *Store) EndSession(ctx context.Context, id, reason string) error {
	const op = "end session"
	if err := s.ready(op); err != nil {
		return err
	}
	t := sqlrows.Nanos(sqlrows.Now())
	// One statement: the row is either ended now or was already; only a
	// missing row leaves exists false.
	var exists bool
	err := s.pool.QueryRow(ctx, `WITH upd AS (
			UPDATE sessions SET ended_at = $1, end_reason = $2, updated_at = $1
			WHERE id = $3 AND ended_at IS NULL RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM upd) OR EXISTS (SELECT 1 FROM sessions WHERE id = $3)`,
		t, reason, id).Scan(&exists)
	if err != nil {
		return s.wrap(op, err)
	}
	if !exists {
		return s.notFound(op, "session "+id)
	}
	return nil
}

// DeleteSession removes a session with its messages and lease (ON DELETE
// CASCADE). Child sessions keep their ParentID.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	return s.updateSession(ctx, "delete session", id, `DELETE FROM sessions WHERE id = $1`, id)
}

// updateSession runs one statement that must touch the session id.
func (s *Store) updateSession(ctx context.Context, op, id, query string, args ...any) error {
	return s.execOne(ctx, op, "session "+id, query, args...)
}

// SessionModels reads the provider/model pairs of ids' rows, through the
// (session_id, seq) index: a listing's page of sessions, not GetSession.
func (s *Store) SessionModels(ctx context.Context, ids []string) (map[string][]store.ModelUse, error) {
	const op = "session models"
	if err := s.ready(op); err != nil {
		return nil, err
	}
	var out map[string][]store.ModelUse
	err := s.retryRead(ctx, func() error {
		out = map[string][]store.ModelUse{}
		rows, err := s.pool.Query(ctx, `SELECT session_id, provider, model, MIN(seq) AS first FROM messages
			WHERE session_id = ANY($1) AND model <> ''
			GROUP BY session_id, provider, model ORDER BY session_id, first`, ids)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var u store.ModelUse
			var first int64
			if err := rows.Scan(&id, &u.Provider, &u.Model, &first); err != nil {
				return err
			}
			out[id] = append(out[id], u)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return out, nil
}
