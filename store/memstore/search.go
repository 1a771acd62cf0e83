package memstore

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"unicode"

	"github.com/talaria-agent/talaria/store"
)

// Snippet length and the default number of hits, as in the SQL backends.
const (
	snippetWords = 16
	defaultHits  = 20
)

// Search finds rows (archived ones included) whose text has every word of
// query, newest first (then by id). A field of the query is a phrase: its
// words must follow each other; a trailing '*' makes its last word a
// prefix. Words are runs of letters and digits, compared case-insensitively;
// everything else in a query is a separator, so no query fails. It scans
// every row: fine for the sizes this store is for.
func (m *Store) Search(ctx context.Context, query string, opt store.SearchOptions) ([]store.SearchHit, error) {
	if err := m.begin(ctx, "search"); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	phrases := parseQuery(query)
	if len(phrases) == 0 {
		return nil, nil
	}
	limit := opt.Limit
	if limit <= 0 {
		limit = defaultHits
	}
	var hits []store.SearchHit
	for _, s := range m.sessions {
		if (opt.SessionID != "" && s.s.ID != opt.SessionID) || (opt.Principal != "" && s.s.Principal != opt.Principal) {
			continue
		}
		for i := range s.rows {
			r := &s.rows[i]
			text := r.Text()
			toks := words(text)
			marked, ok := match(toks, phrases)
			if !ok {
				continue
			}
			hits = append(hits, store.SearchHit{SessionID: s.s.ID, MessageID: r.ID, Seq: r.Seq, Role: r.Role,
				Snippet: snippet(text, toks, marked), CreatedAt: r.CreatedAt})
		}
	}
	slices.SortFunc(hits, func(a, b store.SearchHit) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.MessageID, a.MessageID)
	})
	return hits[:min(len(hits), limit)], nil
}

// phrase is one field of a query: words that must follow each other.
type phrase struct {
	words  []string
	prefix bool // the last word is a prefix
}

func parseQuery(q string) []phrase {
	var out []phrase
	for _, f := range strings.Fields(q) {
		p := phrase{prefix: strings.HasSuffix(f, "*")}
		for _, w := range words(strings.TrimRight(f, "*")) {
			p.words = append(p.words, w.word)
		}
		if len(p.words) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// token is one word of a text, lower-cased, with its byte span.
type token struct {
	word       string
	start, end int
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func words(s string) []token {
	var out []token
	start := -1
	for i, r := range s {
		switch {
		case isWordRune(r) && start < 0:
			start = i
		case !isWordRune(r) && start >= 0:
			out = append(out, token{strings.ToLower(s[start:i]), start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, token{strings.ToLower(s[start:]), start, len(s)})
	}
	return out
}

// match reports whether every phrase occurs in toks, and which tokens the
// occurrences cover.
func match(toks []token, phrases []phrase) (map[int]bool, bool) {
	marked := map[int]bool{}
	for _, p := range phrases {
		found := false
		for i := 0; i+len(p.words) <= len(toks); i++ {
			if phraseAt(toks, i, p) {
				found = true
				for j := range p.words {
					marked[i+j] = true
				}
			}
		}
		if !found {
			return nil, false
		}
	}
	return marked, true
}

func phraseAt(toks []token, i int, p phrase) bool {
	last := len(p.words) - 1
	for j, w := range p.words {
		t := toks[i+j].word
		if t != w && !(j == last && p.prefix && strings.HasPrefix(t, w)) {
			return false
		}
	}
	return true
}

// snippet is up to snippetWords words of text around its first match,
// matched words marked, cuts shown.
func snippet(text string, toks []token, marked map[int]bool) string {
	first := len(toks)
	for i := range marked {
		first = min(first, i)
	}
	from := max(0, min(first-snippetWords/4, len(toks)-snippetWords))
	to := min(len(toks), from+snippetWords)
	var b strings.Builder
	if from > 0 {
		b.WriteString(store.SnippetCut)
	}
	pos := toks[from].start
	for i := from; i < to; i++ {
		t := toks[i]
		b.WriteString(text[pos:t.start])
		if marked[i] {
			b.WriteString(store.SnippetOpen + text[t.start:t.end] + store.SnippetClose)
		} else {
			b.WriteString(text[t.start:t.end])
		}
		pos = t.end
	}
	if to < len(toks) {
		b.WriteString(store.SnippetCut)
	} else {
		b.WriteString(text[pos:])
	}
	return b.String()
}
