package postgres

import (
	"context"
	"time"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// SetCooldown benches one credential, replacing any earlier cooldown of the
// same provider, endpoint and key, for every node on the database. SetAt is filled
// with now when zero.
func (s *Store) SetCooldown(ctx context.Context, c store.Cooldown) error {
	setAt := sqlrows.OrNow(c.SetAt)
	return s.exec(ctx, "set cooldown", `INSERT INTO cooldowns (provider, base_url, key_id, until, reason, set_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (provider, base_url, key_id) DO UPDATE SET until = excluded.until, reason = excluded.reason,
			set_at = excluded.set_at`,
		c.Provider, c.BaseURL, c.KeyID, sqlrows.Nanos(c.Until), c.Reason, sqlrows.Nanos(setAt))
}

// Cooldowns lists a provider's cooldowns that end after at, soonest first.
func (s *Store) Cooldowns(ctx context.Context, provider string, at time.Time) ([]store.Cooldown, error) {
	return list(ctx, s, "cooldowns", sqlrows.ScanCooldown, `SELECT `+sqlrows.CooldownCols+` FROM cooldowns
		WHERE provider = $1 AND until > $2 ORDER BY until, base_url, key_id`, provider, at.UnixNano())
}

// ClearCooldown removes a credential's cooldowns, at every endpoint;
// clearing none is not an error.
func (s *Store) ClearCooldown(ctx context.Context, provider, keyID string) error {
	return s.exec(ctx, "clear cooldown", `DELETE FROM cooldowns WHERE provider = $1 AND key_id = $2`, provider, keyID)
}
