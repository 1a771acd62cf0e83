package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/talaria-agent/talaria/store"
)

// CreateToken stores a gateway bearer token (its hash only).
func (s *Store) CreateToken(ctx context.Context, t *store.Token) error {
	const op = "create token"
	if t.Hash == "" {
		return s.wrap(op, errors.New("token has no hash"))
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now()
	}
	if t.ID == "" {
		t.ID = "tok_" + store.NewID(t.CreatedAt)
	}
	return s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		var revoked sql.NullInt64
		if !t.RevokedAt.IsZero() {
			revoked = sql.NullInt64{Int64: nanos(t.RevokedAt), Valid: true}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO tokens (id, name, principal, hash, created_at, revoked_at)
			VALUES (?, ?, ?, ?, ?, ?)`, t.ID, t.Name, t.Principal, t.Hash, nanos(t.CreatedAt), revoked)
		return err
	})
}

const tokenCols = `id, name, principal, hash, created_at, revoked_at`

func scanToken(sc scanner) (store.Token, error) {
	var (
		t       store.Token
		created int64
		revoked sql.NullInt64
	)
	err := sc.Scan(&t.ID, &t.Name, &t.Principal, &t.Hash, &created, &revoked)
	t.CreatedAt = fromNanos(created)
	t.RevokedAt = fromNanos(revoked.Int64)
	return t, err
}

// TokenByHash returns the valid token with this hash.
func (s *Store) TokenByHash(ctx context.Context, hash string) (*store.Token, error) {
	const op = "token by hash"
	if err := s.ready(op); err != nil {
		return nil, err
	}
	t, err := scanToken(s.r.QueryRowContext(ctx,
		`SELECT `+tokenCols+` FROM tokens WHERE hash = ? AND revoked_at IS NULL`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, s.notFound(op, "token")
	}
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return &t, nil
}

// ListTokens lists every token, oldest first.
func (s *Store) ListTokens(ctx context.Context) ([]store.Token, error) {
	const op = "list tokens"
	if err := s.ready(op); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+tokenCols+` FROM tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	defer rows.Close()
	var out []store.Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, s.wrap(op, err)
		}
		out = append(out, t)
	}
	return out, s.wrap(op, rows.Err())
}

// RevokeToken revokes a token; revoking twice keeps the first time.
func (s *Store) RevokeToken(ctx context.Context, id string) error {
	const op = "revoke token"
	return s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`, nanos(now()), id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return s.notFound(op, fmt.Sprintf("token %s", id))
		}
		return nil
	})
}
