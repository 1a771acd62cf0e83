package sqlite

import (
	"context"
)

// ftsBatch is how many unindexed rows an append tolerates before it indexes
// them in its own transaction. Indexing rows in bulk writes one FTS segment
// for the batch instead of one per append; Search indexes the rest first.
const ftsBatch = 64

// indexBacklog adds every message not yet in the full-text index, inside tx
// (which holds the write lock, so no row can commit behind the mark).
func (s *Store) indexBacklog(ctx context.Context, tx *wtx) error {
	var upto, hi int64
	if err := tx.QueryRowContext(ctx, `SELECT indexed_upto FROM fts_state`).Scan(&upto); err != nil {
		return err
	}
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM messages`).Scan(&hi); err != nil {
		return err
	}
	if hi > upto {
		if _, err := tx.ExecContext(ctx, `INSERT INTO messages_fts(rowid, text)
			SELECT id, text FROM messages WHERE id > ? AND id <= ? AND text <> ''`, upto, hi); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE fts_state SET indexed_upto = ?`, hi); err != nil {
			return err
		}
		// The batch's mark: the newest created_at at or below hi.
		if _, err := tx.ExecContext(ctx, `INSERT INTO search_marks (upto, newest) SELECT ?2,
			max(coalesce((SELECT newest FROM search_marks ORDER BY upto DESC LIMIT 1), 0),
				coalesce((SELECT max(created_at) FROM messages WHERE id > ?1 AND id <= ?2), 0))`, upto, hi); err != nil {
			return err
		}
		upto = hi
	}
	s.ftsUpto.Store(upto)
	return nil
}

// maybeIndex indexes the backlog once it reaches ftsBatch rows; lastID is
// the newest id just inserted. The mark it compares with may be stale (other
// processes index too), which only makes it index a little early.
func (s *Store) maybeIndex(ctx context.Context, tx *wtx, lastID int64) error {
	if lastID-s.ftsUpto.Load() < ftsBatch {
		return nil
	}
	return s.indexBacklog(ctx, tx)
}

// catchUpIndex makes every committed message searchable. When another
// process holds the write lock past the busy timeout, the search goes on
// with the index as it is (missing at most the newest rows) rather than
// failing.
func (s *Store) catchUpIndex(ctx context.Context) error {
	if s.readOnly {
		return nil // searches the index as it is
	}
	var behind bool
	if err := s.r.QueryRowContext(ctx, `SELECT coalesce((SELECT max(id) FROM messages), 0) >
		(SELECT indexed_upto FROM fts_state)`).Scan(&behind); err != nil {
		return s.wrap("search", err)
	}
	if !behind {
		return nil
	}
	err := s.write(ctx, "index", func(ctx context.Context, tx *wtx) error { return s.indexBacklog(ctx, tx) })
	if err != nil && ctx.Err() == nil {
		s.log.Warn("full-text index catch-up failed; searching without the newest messages", "path", s.path, "err", err)
		return nil
	}
	return err
}
