package postgres

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

const (
	// maxLexeme drops longer tokens (a base64 blob) from documents and
	// queries alike; PostgreSQL refuses lexemes over 2 KiB.
	maxLexeme = 256
	// maxDocument bounds a row's search document well under tsvector's
	// 1 MiB; words past it in a huge tool output are not indexed.
	maxDocument = 512 << 10
)

// Full-text search is PostgreSQL's tsvector with a GIN index, but the
// document and the query are both built here, by one tokenizer: a word is
// a run of letters, digits and combining marks, lowercased. That keeps
// matching the same on every server whatever its locale or text search
// configuration (the built-in parser reads "a.go" as one file-name token
// and, under the C locale, does not lowercase "É"), and the same as
// store/sqlite's unicode61 tokenizer for the cases the contract covers.

type token struct {
	word       string // lowercased
	start, end int    // byte offsets in the original text
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsNumber(r) || unicode.Is(unicode.Mn, r)
}

// tokens splits text into words with their offsets.
func tokens(text string) []token {
	var out []token
	start := -1
	for i, r := range text {
		if r == utf8.RuneError || !isWordRune(r) {
			if start >= 0 {
				out = append(out, token{strings.ToLower(text[start:i]), start, i})
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, token{strings.ToLower(text[start:]), start, len(text)})
	}
	return out
}

// document is the tsvector literal of text: its distinct words, quoted.
// Words hold only letters, digits and marks, so they need no escaping.
func document(text string) string {
	seen := map[string]bool{}
	var words []string
	size := 0
	for _, t := range tokens(text) {
		if len(t.word) > maxLexeme || seen[t.word] {
			continue
		}
		if size+len(t.word)+3 > maxDocument {
			break
		}
		seen[t.word] = true
		size += len(t.word) + 3
		words = append(words, t.word)
	}
	sort.Strings(words)
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('\'')
		b.WriteString(w)
		b.WriteByte('\'')
	}
	return b.String()
}

// term is one word of a query; prefix matches any word starting with it.
type term struct {
	word   string
	prefix bool
}

// queryTerms turns user text into terms; a trailing '*' on a word makes its
// last piece a prefix. Every term must match. The text is never query
// syntax: operators and quotes are separators like any other punctuation.
func queryTerms(q string) []term {
	var out []term
	for _, w := range strings.Fields(q) {
		prefix := strings.HasSuffix(w, "*")
		ts := tokens(w)
		for i, t := range ts {
			if len(t.word) > maxLexeme {
				continue
			}
			out = append(out, term{word: t.word, prefix: prefix && i == len(ts)-1})
		}
	}
	return out
}

// tsquery is the tsquery literal of terms: 'a' & 'b':*.
func tsquery(terms []term) string {
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" & ")
		}
		b.WriteByte('\'')
		b.WriteString(t.word)
		b.WriteByte('\'')
		if t.prefix {
			b.WriteString(":*")
		}
	}
	return b.String()
}

func (t term) matches(word string) bool {
	if t.prefix {
		return strings.HasPrefix(word, t.word)
	}
	return word == t.word
}

// Search finds messages whose text matches every word of query (a trailing
// '*' makes a word a prefix), newest first, archived rows included, through
// the GIN index. Matched words in SearchHit.Snippet are wrapped in
// store.SnippetOpen and store.SnippetClose.
func (s *Store) Search(ctx context.Context, query string, opt store.SearchOptions) ([]store.SearchHit, error) {
	const op = "search"
	if err := s.ready(op); err != nil {
		return nil, err
	}
	terms := queryTerms(query)
	if len(terms) == 0 {
		return nil, nil
	}
	limit := opt.Limit
	if limit <= 0 {
		limit = sqlrows.DefaultSearchLimit
	}
	// The statement is bounded on the server too: a search that outlives
	// SearchStatementTimeout is cancelled there, whatever the client does
	// (a cancelled ctx also cancels it).
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL statement_timeout = %d", SearchStatementTimeout.Milliseconds())); err != nil {
		return nil, s.wrap(op, err)
	}
	rows, err := tx.Query(ctx, `SELECT session_id, id, seq, role, text, created_at FROM messages
		WHERE search @@ $1::tsquery AND ($2 = '' OR session_id = $2)
			AND ($4 = '' OR session_id IN (SELECT id FROM sessions WHERE principal = $4))
		ORDER BY created_at DESC, id DESC LIMIT $3`, tsquery(terms), opt.SessionID, limit, opt.Principal)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	defer rows.Close()
	var out []store.SearchHit
	for rows.Next() {
		var (
			h       store.SearchHit
			role    string
			text    []byte
			created int64
		)
		if err := rows.Scan(&h.SessionID, &h.MessageID, &h.Seq, &role, &text, &created); err != nil {
			return nil, s.wrap(op, err)
		}
		h.Role = llm.Role(role)
		h.CreatedAt = sqlrows.FromNanos(created)
		h.Snippet = snippet(string(text), terms)
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(op, err)
	}
	return out, nil
}

// snippet cuts about sqlrows.SnippetWords words of text around the first match and
// marks every matched word.
func snippet(text string, terms []term) string {
	ts := tokens(text)
	first := -1
	hit := make([]bool, len(ts))
	for i, t := range ts {
		for _, q := range terms {
			if q.matches(t.word) {
				hit[i] = true
				if first < 0 {
					first = i
				}
				break
			}
		}
	}
	if len(ts) == 0 {
		return ""
	}
	if first < 0 {
		first = 0
	}
	from := max(0, first-sqlrows.SnippetWords/4)
	to := min(len(ts), from+sqlrows.SnippetWords)
	from = max(0, to-sqlrows.SnippetWords)
	var b strings.Builder
	if from > 0 {
		b.WriteString(store.SnippetCut)
	}
	pos := ts[from].start
	for i := from; i < to; i++ {
		b.WriteString(text[pos:ts[i].start])
		if hit[i] {
			b.WriteString(store.SnippetOpen + text[ts[i].start:ts[i].end] + store.SnippetClose)
		} else {
			b.WriteString(text[ts[i].start:ts[i].end])
		}
		pos = ts[i].end
	}
	if to < len(ts) {
		b.WriteString(store.SnippetCut)
	} else {
		b.WriteString(text[pos:])
	}
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}

// SearchStatementTimeout bounds one search statement on the server.
const SearchStatementTimeout = 10 * time.Second
