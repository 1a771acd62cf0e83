package sqlite

import (
	"context"
	"fmt"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// CreateToken stores a gateway bearer token (its hash only).
func (s *Store) CreateToken(ctx context.Context, t *store.Token) error {
	const op = "create token"
	if err := t.Prepare(sqlrows.Now()); err != nil {
		return s.wrap(op, err)
	}
	return s.write(ctx, op, func(ctx context.Context, tx *wtx) error {
		// Names are unique among valid tokens (a revoked one may share
		// its name with its replacement).
		res, err := tx.ExecContext(ctx, `INSERT INTO tokens (id, name, principal, hash, scope, managed, created_at, revoked_at)
			SELECT ?, ?, ?, ?, ?, ?, ?, ?
			WHERE ? IS NOT NULL OR NOT EXISTS (SELECT 1 FROM tokens WHERE name = ? AND revoked_at IS NULL)`,
			t.ID, t.Name, t.Principal, t.Hash, t.Scope, t.Managed, sqlrows.Nanos(t.CreatedAt), sqlrows.NullNanos(t.RevokedAt),
			sqlrows.NullNanos(t.RevokedAt), t.Name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return fmt.Errorf("token %q: %w", t.Name, store.ErrTokenNameTaken)
		}
		return nil
	})
}

// TokenByHash returns the valid token with this hash.
func (s *Store) TokenByHash(ctx context.Context, hash string) (*store.Token, error) {
	return get(ctx, s, s.tokenReader(), "token by hash", "token", sqlrows.ScanToken,
		`SELECT `+sqlrows.TokenCols+` FROM tokens WHERE hash = ? AND revoked_at IS NULL`, hash)
}
