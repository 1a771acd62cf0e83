package sqlite

import (
	"context"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// AllCooldowns lists every stored cooldown, expired ones too, for copying
// the database elsewhere (talaria db migrate).
func (s *Store) AllCooldowns(ctx context.Context) ([]store.Cooldown, error) {
	const op = "all cooldowns"
	if err := s.ready(op); err != nil {
		return nil, err
	}
	out, err := collect(sqlrows.ScanCooldown)(s.r.QueryContext(ctx,
		`SELECT `+sqlrows.CooldownCols+` FROM cooldowns ORDER BY provider, base_url, key_id`))
	return out, s.wrap(op, err)
}

// LastSeq is the highest seq the session ever handed out (deleted rows
// included), so a copy keeps seqs from being reused.
func (s *Store) LastSeq(ctx context.Context, id string) (int64, error) {
	const op = "last seq"
	if err := s.ready(op); err != nil {
		return 0, err
	}
	var n int64
	err := s.r.QueryRowContext(ctx, lastSeqSQL, id).Scan(&n)
	return n, s.lookup(op, "session "+id, err)
}

// AllMemories lists every memory entry of every workspace and user, by id,
// for copying the database.
func (s *Store) AllMemories(ctx context.Context) ([]store.MemoryEntry, error) {
	const op = "all memories"
	if err := s.ready(op); err != nil {
		return nil, err
	}
	out, err := collect(sqlrows.ScanMemory)(s.r.QueryContext(ctx,
		`SELECT `+sqlrows.MemoryCols+` FROM memory ORDER BY id`))
	return out, s.wrap(op, err)
}
