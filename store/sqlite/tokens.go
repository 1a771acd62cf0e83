package sqlite

import (
	"context"
	"errors"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// CreateToken stores a gateway bearer token (its hash only).
func (s *Store) CreateToken(ctx context.Context, t *store.Token) error {
	const op = "create token"
	if t.Hash == "" {
		return s.wrap(op, errors.New("token has no hash"))
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = sqlrows.Now()
	}
	if t.ID == "" {
		t.ID = "tok_" + store.NewID(t.CreatedAt)
	}
	return s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO tokens (id, name, principal, hash, created_at, revoked_at)
			VALUES (?, ?, ?, ?, ?, ?)`, t.ID, t.Name, t.Principal, t.Hash, sqlrows.Nanos(t.CreatedAt), sqlrows.NullNanos(t.RevokedAt))
		return err
	})
}

// TokenByHash returns the valid token with this hash.
func (s *Store) TokenByHash(ctx context.Context, hash string) (*store.Token, error) {
	const op = "token by hash"
	if err := s.ready(op); err != nil {
		return nil, err
	}
	t, err := sqlrows.ScanToken(s.tokenReader().QueryRowContext(ctx,
		`SELECT `+sqlrows.TokenCols+` FROM tokens WHERE hash = ? AND revoked_at IS NULL`, hash))
	if err != nil {
		return nil, s.lookup(op, "token", err)
	}
	return &t, nil
}

// ListTokens lists every token, oldest first.
func (s *Store) ListTokens(ctx context.Context) ([]store.Token, error) {
	const op = "list tokens"
	if err := s.ready(op); err != nil {
		return nil, err
	}
	out, err := collect(sqlrows.ScanToken)(s.r.QueryContext(ctx, `SELECT `+sqlrows.TokenCols+` FROM tokens ORDER BY created_at, id`))
	return out, s.wrap(op, err)
}

// RevokeToken revokes a token; revoking twice keeps the first time.
func (s *Store) RevokeToken(ctx context.Context, id string) error {
	const op = "revoke token"
	return s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		return execOne(ctx, tx, s.notFound(op, "token "+id),
			`UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`, sqlrows.Nanos(sqlrows.Now()), id)
	})
}
