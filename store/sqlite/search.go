package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// Search finds messages whose text matches every word of query (a trailing
// '*' makes a word a prefix), newest first, archived rows included. The
// query is plain text, never FTS5 syntax: operators and quotes in it are
// searched for as words, so no input can make the query fail. Matched
// words in SearchHit.Snippet are wrapped in store.SnippetOpen and
// store.SnippetClose.
//
// The newest hits are found before any snippet is made (see newestMatches),
// and snippets are made for those rows only: a common word matches most of
// the database, and a snippet costs far more than finding a row.
func (s *Store) Search(ctx context.Context, query string, opt store.SearchOptions) ([]store.SearchHit, error) {
	const op = "search"
	if err := s.ready(op); err != nil {
		return nil, err
	}
	match := ftsQuery(query)
	if match == "" {
		return nil, nil
	}
	if err := s.catchUpIndex(ctx); err != nil {
		return nil, err
	}
	limit := opt.Limit
	if limit <= 0 {
		limit = sqlrows.DefaultSearchLimit
	}
	top, err := s.newestMatches(ctx, match, opt, limit)
	if err != nil || len(top) == 0 {
		return nil, s.wrap(op, err)
	}
	hits, err := s.snippets(ctx, match, top)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return hits, nil
}

// hitKey is a matching row's place in the result order.
type hitKey struct{ id, created int64 }

// before reports whether a comes before b: newer first, then higher id.
func (a hitKey) before(b hitKey) bool {
	return a.created > b.created || (a.created == b.created && a.id > b.id)
}

// maxWalkChunk caps how many matches one step of the walk reads.
const maxWalkChunk = 4096

// newestMatches returns the ids of the limit newest matches (created_at,
// then id, descending), in that order. It walks the index's matches from
// the highest id down in growing chunks, keeping the best limit rows, and
// stops when the matches run out or when search_marks proves that no row
// below the walk's position is newer than the last row kept. Ids follow
// creation time closely, so for a common word the first chunk or two
// settle it; rows stamped out of order (imported, concurrent turns) only
// make the walk go further, never change the answer.
func (s *Store) newestMatches(ctx context.Context, match string, opt store.SearchOptions, limit int) ([]hitKey, error) {
	lo, hi := int64(0), int64(math.MaxInt64)
	if opt.SessionID != "" {
		// The session's id range bounds the walk; an old session's
		// matches are not behind every newer session's.
		var mn, mx sql.NullInt64
		if err := s.r.QueryRowContext(ctx, `SELECT min(id), max(id) FROM messages WHERE session_id = ?`,
			opt.SessionID).Scan(&mn, &mx); err != nil {
			return nil, err
		}
		if !mn.Valid {
			return nil, nil
		}
		lo, hi = mn.Int64, mx.Int64+1
	}
	walk := `SELECT m.id, m.created_at FROM messages_fts f CROSS JOIN messages m ON m.id = f.rowid
		WHERE messages_fts MATCH ? AND f.rowid >= ? AND f.rowid < ?`
	args := []any{match, lo, hi}
	if opt.SessionID != "" {
		walk += ` AND m.session_id = ?`
		args = append(args, opt.SessionID)
	}
	if opt.Principal != "" {
		walk += ` AND m.session_id IN (SELECT id FROM sessions WHERE principal = ?)`
		args = append(args, opt.Principal)
	}
	walk += ` ORDER BY f.rowid DESC LIMIT ?`
	cursorArg := 2 // args[2] is the exclusive upper id
	chunk := max(2*limit, 64)
	top := make([]hitKey, 0, limit+chunk)
	for {
		rows, err := s.r.QueryContext(ctx, walk, append(args, chunk)...)
		if err != nil {
			return nil, err
		}
		n := 0
		for rows.Next() {
			var m hitKey
			if err := rows.Scan(&m.id, &m.created); err != nil {
				rows.Close()
				return nil, err
			}
			top = append(top, m)
			args[cursorArg] = m.id
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		slices.SortFunc(top, func(a, b hitKey) int {
			if a.before(b) {
				return -1
			}
			return 1
		})
		top = top[:min(len(top), limit)]
		if n < chunk {
			return top, nil // every match seen
		}
		if len(top) == limit {
			done, err := s.settled(ctx, args[cursorArg].(int64), top[limit-1])
			if err != nil || done {
				return top, err
			}
		}
		chunk = min(2*chunk, maxWalkChunk)
		top = slices.Grow(top, chunk)
	}
}

// settled reports whether no row with an id below cursor can come before
// last: the newest created_at at or below cursor-1 (the mark of the batch
// holding it, which may count a few rows above cursor) is not newer.
func (s *Store) settled(ctx context.Context, cursor int64, last hitKey) (bool, error) {
	var newest int64
	err := s.r.QueryRowContext(ctx, `SELECT newest FROM search_marks WHERE upto >= ? ORDER BY upto LIMIT 1`,
		cursor-1).Scan(&newest)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil // no mark: keep walking
	}
	return err == nil && newest <= last.created, err
}

// snippets reads the hits of top, with their snippets, in top's order.
func (s *Store) snippets(ctx context.Context, q string, top []hitKey) ([]store.SearchHit, error) {
	lo, hi := top[0].id, top[0].id
	args := []any{store.SnippetOpen, store.SnippetClose, store.SnippetCut, sqlrows.SnippetWords, q, 0, 0}
	for _, m := range top {
		lo, hi = min(lo, m.id), max(hi, m.id)
		args = append(args, m.id)
	}
	args[5], args[6] = lo, hi
	// The index matches only within the hits' id range (the walk has read
	// that range already); the IN list, kept from the index by the unary
	// '+' (given to FTS5 it runs the whole match once per id), filters the
	// rows before their snippet is made.
	rows, err := s.r.QueryContext(ctx, `SELECT m.session_id, m.id, m.seq, m.role,
		snippet(messages_fts, 0, ?, ?, ?, ?), m.created_at
		FROM messages_fts f CROSS JOIN messages m ON m.id = f.rowid
		WHERE messages_fts MATCH ? AND f.rowid >= ? AND f.rowid <= ? AND +f.rowid IN (`+placeholders(len(top))+`)`,
		args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byID := make(map[int64]store.SearchHit, len(top))
	for rows.Next() {
		var (
			h       store.SearchHit
			role    string
			created int64
		)
		if err := rows.Scan(&h.SessionID, &h.MessageID, &h.Seq, &role, &h.Snippet, &created); err != nil {
			return nil, err
		}
		h.Role = llm.Role(role)
		h.CreatedAt = sqlrows.FromNanos(created)
		byID[h.MessageID] = h
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]store.SearchHit, 0, len(top))
	for _, m := range top {
		if h, ok := byID[m.id]; ok {
			out = append(out, h)
		}
	}
	return out, nil
}

// ftsQuery turns user text into an FTS5 query that cannot be a syntax
// error: every word becomes a quoted phrase (quotes doubled), joined by
// the implicit AND. Words without a letter or digit are dropped, since the
// tokenizer would reduce them to nothing. "" means nothing to search.
func ftsQuery(q string) string {
	var b strings.Builder
	for _, w := range strings.Fields(q) {
		prefix := strings.HasSuffix(w, "*")
		w = strings.TrimRight(w, "*")
		if !strings.ContainsFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(w, `"`, `""`))
		b.WriteByte('"')
		if prefix {
			b.WriteByte('*')
		}
	}
	return b.String()
}
