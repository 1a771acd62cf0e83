package sqlite

import (
	"context"
	"strings"
	"unicode"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// SnippetOpen and SnippetClose wrap each matched word in SearchHit.Snippet.
const (
	SnippetOpen  = "«"
	SnippetClose = "»"
)

const (
	defaultSearchLimit = 20
	snippetCut         = "…" // marks text cut off around the match
	snippetWords       = 16  // tokens of context in a snippet
)

// Search finds messages whose text matches every word of query (a trailing
// '*' makes a word a prefix), newest first, archived rows included. The
// query is plain text, never FTS5 syntax: operators and quotes in it are
// searched for as words, so no input can make the query fail. Matched
// words in SearchHit.Snippet are wrapped in SnippetOpen and SnippetClose.
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
		limit = defaultSearchLimit
	}
	sqlText := `SELECT m.session_id, m.id, m.seq, m.role,
		snippet(messages_fts, 0, ?, ?, ?, ?), m.created_at
		FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
		WHERE messages_fts MATCH ?`
	args := []any{SnippetOpen, SnippetClose, snippetCut, snippetWords, match}
	if opt.SessionID != "" {
		sqlText += ` AND m.session_id = ?`
		args = append(args, opt.SessionID)
	}
	if opt.Principal != "" {
		sqlText += ` AND m.session_id IN (SELECT id FROM sessions WHERE principal = ?)`
		args = append(args, opt.Principal)
	}
	sqlText += ` ORDER BY m.created_at DESC, m.id DESC LIMIT ?`
	args = append(args, limit)

	rows, err := s.r.QueryContext(ctx, sqlText, args...)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	defer rows.Close()
	var out []store.SearchHit
	for rows.Next() {
		var (
			h       store.SearchHit
			role    string
			created int64
		)
		if err := rows.Scan(&h.SessionID, &h.MessageID, &h.Seq, &role, &h.Snippet, &created); err != nil {
			return nil, s.wrap(op, err)
		}
		h.Role = llm.Role(role)
		h.CreatedAt = fromNanos(created)
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(op, err)
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
