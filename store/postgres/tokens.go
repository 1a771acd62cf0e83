package postgres

import (
	"context"
	"fmt"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// CreateToken stores a gateway bearer token (its hash only), seen at once
// by every node on the database.
func (s *Store) CreateToken(ctx context.Context, t *store.Token) error {
	const op = "create token"
	if err := s.ready(op); err != nil {
		return err
	}
	if err := t.Prepare(sqlrows.Now()); err != nil {
		return s.wrap(op, err)
	}
	// Names are unique among valid tokens (a revoked one may share its
	// name with its replacement).
	tag, err := s.pool.Exec(ctx, `INSERT INTO tokens (id, name, principal, hash, scope, managed, created_at, revoked_at)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8::bigint
		WHERE $8::bigint IS NOT NULL OR NOT EXISTS (SELECT 1 FROM tokens WHERE name = $2 AND revoked_at IS NULL)`,
		t.ID, t.Name, t.Principal, t.Hash, t.Scope, t.Managed, sqlrows.Nanos(t.CreatedAt), sqlrows.NullNanos(t.RevokedAt))
	if err != nil {
		return s.wrap(op, err)
	}
	if tag.RowsAffected() == 0 {
		return s.wrap(op, fmt.Errorf("token %q: %w", t.Name, store.ErrTokenNameTaken))
	}
	return nil
}

// TokenByHash returns the valid (not revoked) token with this hash.
func (s *Store) TokenByHash(ctx context.Context, hash string) (*store.Token, error) {
	return get(ctx, s, "token by hash", "token", sqlrows.ScanToken,
		`SELECT `+sqlrows.TokenCols+` FROM tokens WHERE hash = $1 AND revoked_at IS NULL`, hash)
}
