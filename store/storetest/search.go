package storetest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

var searchCases = []testCase[SearchStore]{
	{"FindsNewestFirst", testSearchOrder},
	{"NewestFirstOutOfIDOrder", testSearchOutOfOrder},
	{"SessionFilterAndLimit", testSearchFilter},
	{"ArchivedIncluded", testSearchArchived},
	{"DeletedExcluded", testSearchDeleted},
	{"HostileQueries", testSearchHostile},
	{"Unicode", testSearchUnicode},
}

// seedSearch writes three rows mentioning "kumquat" at known times across
// two sessions, plus noise.
func seedSearch(t *testing.T, s SearchStore) (a, b *store.Session, rows []*store.Message) {
	a, b = newSession(t, s), newSession(t, s)
	mk := func(role llm.Role, txt string, n int) *store.Message {
		m := text(role, txt)
		m.CreatedAt = at(n)
		return m
	}
	r1 := mk(llm.RoleUser, "please peel the kumquat carefully", 1)
	r2 := mk(llm.RoleAssistant, "The kumquat is peeled.", 3)
	r3 := mk(llm.RoleUser, "another kumquat question", 2)
	noise := mk(llm.RoleUser, "nothing to see here", 4)
	appendMsgs(t, s, store.Fence{SessionID: a.ID}, r1, r2, noise)
	appendMsgs(t, s, store.Fence{SessionID: b.ID}, r3)
	return a, b, []*store.Message{r1, r2, r3}
}

func search(t *testing.T, s SearchStore, q string, opt store.SearchOptions) []store.SearchHit {
	t.Helper()
	hits, err := s.Search(ctx(t), q, opt)
	if err != nil {
		t.Fatalf("Search(%q): %v", q, err)
	}
	return hits
}

// wantOnlyHit searches for q and wants message id as the one hit.
func wantOnlyHit(t *testing.T, s SearchStore, q string, id int64) {
	t.Helper()
	if hits := search(t, s, q, store.SearchOptions{}); len(hits) != 1 || hits[0].MessageID != id {
		t.Fatalf("Search(%q) = %+v, want message %d alone", q, hits, id)
	}
}

func testSearchOrder(t *testing.T, s SearchStore) {
	a, b, rows := seedSearch(t, s)
	hits := search(t, s, "kumquat", store.SearchOptions{})
	if len(hits) != 3 {
		t.Fatalf("hits = %+v, want 3", hits)
	}
	// Newest first: r2 (t=3), r3 (t=2), r1 (t=1).
	want := []struct {
		m       *store.Message
		session string
	}{{rows[1], a.ID}, {rows[2], b.ID}, {rows[0], a.ID}}
	for i, w := range want {
		h := hits[i]
		if h.MessageID != w.m.ID || h.SessionID != w.session || h.Seq != w.m.Seq || h.Role != w.m.Role ||
			!h.CreatedAt.Equal(w.m.CreatedAt) {
			t.Errorf("hit %d = %+v, want message %d of %s (seq %d, %s, %v)", i, h, w.m.ID, w.session, w.m.Seq,
				w.m.Role, w.m.CreatedAt)
		}
		if !strings.Contains(strings.ToLower(h.Snippet), "kumquat") {
			t.Errorf("hit %d snippet %q lacks the term", i, h.Snippet)
		}
	}
	// Every word must match.
	wantOnlyHit(t, s, "kumquat peeled", rows[1].ID)
	if hits := search(t, s, "pineapple", store.SearchOptions{}); len(hits) != 0 {
		t.Fatalf("search for an absent word = %+v", hits)
	}
}

func testSearchFilter(t *testing.T, s SearchStore) {
	a, b, _ := seedSearch(t, s)
	for _, tt := range []struct {
		opt  store.SearchOptions
		want int
	}{
		{store.SearchOptions{SessionID: a.ID}, 2},
		{store.SearchOptions{SessionID: b.ID}, 1},
		{store.SearchOptions{SessionID: "unknown"}, 0},
		{store.SearchOptions{Limit: 1}, 1},
		{store.SearchOptions{SessionID: a.ID, Limit: 1}, 1},
	} {
		t.Run(fmt.Sprintf("%+v", tt.opt), func(t *testing.T) {
			hits := search(t, s, "kumquat", tt.opt)
			if len(hits) != tt.want {
				t.Fatalf("hits = %d, want %d", len(hits), tt.want)
			}
			for _, h := range hits {
				if tt.opt.SessionID != "" && h.SessionID != tt.opt.SessionID {
					t.Fatalf("hit from session %s", h.SessionID)
				}
			}
		})
	}
}

func testSearchArchived(t *testing.T, s SearchStore) {
	a := newSession(t, s)
	f := store.Fence{SessionID: a.ID}
	old := text(llm.RoleUser, "the durian decision")
	appendMsgs(t, s, f, old, text(llm.RoleAssistant, "ok"))
	if err := s.Replace(ctx(t), f, 2, text(llm.RoleUser, "summary without the fruit")); err != nil {
		t.Fatal(err)
	}
	wantOnlyHit(t, s, "durian", old.ID)
}

func testSearchDeleted(t *testing.T, s SearchStore) {
	a := newSession(t, s)
	f := store.Fence{SessionID: a.ID}
	gone, kept := text(llm.RoleUser, "rambutan one"), text(llm.RoleUser, "rambutan two")
	appendMsgs(t, s, f, gone, kept)
	if err := s.Delete(ctx(t), f, gone.ID); err != nil {
		t.Fatal(err)
	}
	wantOnlyHit(t, s, "rambutan", kept.ID)
}

func testSearchHostile(t *testing.T, s SearchStore) {
	a := newSession(t, s)
	appendMsgs(t, s, store.Fence{SessionID: a.ID},
		text(llm.RoleUser, `foo and (bar) "quoted" NEAR col:value`),
		text(llm.RoleUser, "unrelated"))
	queries := []string{
		`"foo AND (`, `foo"bar`, `"`, `""`, `(`, `)`, `*`, `-`, `+`, `^foo`, `col:value`, `NEAR(foo bar)`,
		`foo OR`, `AND`, `NOT`, `'); DROP TABLE messages; --`, `{foo}`, `foo*bar`, `\`, "", "   ", "\x00",
		"foo\nbar", `%_`, `[a-z]`,
	}
	for _, q := range queries {
		t.Run(fmt.Sprintf("%q", q), func(t *testing.T) {
			hits, err := s.Search(ctx(t), q, store.SearchOptions{})
			if err != nil {
				t.Fatalf("Search(%q) failed: %v", q, err)
			}
			for _, h := range hits {
				if h.SessionID != a.ID {
					t.Fatalf("hit from unknown session %q", h.SessionID)
				}
			}
		})
	}
	// A word written with syntax around it still finds the row.
	if hits := search(t, s, `"foo`, store.SearchOptions{}); len(hits) != 1 {
		t.Fatalf(`Search("\"foo") = %+v, want the row`, hits)
	}
	// The data survived the injection attempt.
	if got := load(t, s, a.ID, store.MessageQuery{}); len(got) != 2 {
		t.Fatalf("rows after hostile queries = %d", len(got))
	}
}

func testSearchUnicode(t *testing.T, s SearchStore) {
	a := newSession(t, s)
	m := text(llm.RoleUser, "Das Café serviert Crème brûlée und 寿司")
	appendMsgs(t, s, store.Fence{SessionID: a.ID}, m)
	for _, q := range []string{"café", "CAFÉ", "brûlée"} {
		if hits := search(t, s, q, store.SearchOptions{}); len(hits) != 1 || hits[0].MessageID != m.ID {
			t.Errorf("Search(%q) = %+v", q, hits)
		}
	}
}

// testSearchOutOfOrder stores many matching rows whose times are not in
// the order of their ids (imported rows, concurrent turns), with ties, in
// several appends and sessions, and checks every limit returns exactly the
// newest by time, then by id.
func testSearchOutOfOrder(t *testing.T, s SearchStore) {
	a, b := newSession(t, s), newSession(t, s)
	const n = 300
	var all []*store.Message
	for i := range n {
		m := text(llm.RoleUser, fmt.Sprintf("guava note %d", i))
		if i%7 == 0 {
			m = text(llm.RoleUser, fmt.Sprintf("other note %d", i)) // not a match
		}
		// A scrambled time, three rows per second: ties are broken by id.
		m.CreatedAt = at((i * 7919 % n) / 3)
		all = append(all, m)
	}
	for start := 0; start < n; start += 50 {
		f := store.Fence{SessionID: a.ID}
		if start/50%2 == 1 {
			f = store.Fence{SessionID: b.ID}
		}
		appendMsgs(t, s, f, all[start:start+50]...)
	}
	var want []*store.Message
	for _, m := range all {
		if strings.HasPrefix(m.Text(), "guava") {
			want = append(want, m)
		}
	}
	slices.SortFunc(want, func(x, y *store.Message) int {
		if c := y.CreatedAt.Compare(x.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(y.ID, x.ID)
	})
	for _, tt := range []struct {
		limit   int
		session string
	}{{1, ""}, {20, ""}, {150, ""}, {n, ""}, {20, b.ID}, {n, a.ID}} {
		t.Run(fmt.Sprintf("limit=%d,session=%q", tt.limit, tt.session), func(t *testing.T) {
			hits := search(t, s, "guava", store.SearchOptions{Limit: tt.limit, SessionID: tt.session})
			var exp []int64
			for _, m := range want {
				if (tt.session == "" || m.SessionID == tt.session) && len(exp) < tt.limit {
					exp = append(exp, m.ID)
				}
			}
			got := make([]int64, len(hits))
			for i, h := range hits {
				got[i] = h.MessageID
				if !strings.Contains(h.Snippet, "guava") {
					t.Errorf("hit %d snippet %q", h.MessageID, h.Snippet)
				}
			}
			if !slices.Equal(got, exp) {
				t.Fatalf("hits = %v\nwant   %v", got, exp)
			}
		})
	}
}
