package postgres

import (
	"context"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// TokenByHash returns the valid (not revoked) token with this hash.
func (s *Store) TokenByHash(ctx context.Context, hash string) (*store.Token, error) {
	return get(ctx, s, "token by hash", "token", sqlrows.ScanToken,
		`SELECT `+sqlrows.TokenCols+` FROM tokens WHERE hash = $1 AND revoked_at IS NULL`, hash)
}
