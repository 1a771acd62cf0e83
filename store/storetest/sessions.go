package storetest

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

var sessionCases = []testCase[store.SessionService]{
	{"CreateGetRoundTrip", testCreateGetRoundTrip},
	{"CreateFillsDefaults", testCreateFillsDefaults},
	{"CreateDuplicateFails", testCreateDuplicateFails},
	{"NotFound", testSessionNotFound},
	{"ListNewestFirstAndPaging", testListOrderPaging},
	{"ListDefaultLimit", testListDefaultLimit},
	{"ListMovesTouchedSessionFirst", testListTouched},
	{"ChildSessions", testChildSessions},
	{"ChildSessionsCarryKind", testChildKinds},
	{"ResolveTipSkipsSubagents", testResolveTipSkipsSubagents},
	{"SetTitle", testSetTitle},
	{"EndSessionIdempotent", testEndSession},
	{"AddUsage", testAddUsage},
	{"AddUsageConcurrent", testAddUsageConcurrent},
	{"MessageCount", testMessageCount},
	{"SessionModels", testSessionModels},
	{"DeleteSession", testDeleteSession},
}

func testCreateGetRoundTrip(t *testing.T, s store.SessionService) {
	want := store.Session{
		ID:           "20210314-150926-abcdef",
		Title:        "Résumé of 日本語 work 🚀",
		Provider:     "anthropic",
		Model:        "claude-test",
		ParentID:     "20210314-150000-000000",
		Kind:         store.SessionSubagent,
		SystemPrompt: "You are helpful.\n\tTabs, \"quotes\", 'apostrophes', and \\ backslashes.",
		Cwd:          "/home/ünïcode/project",
		StartedAt:    at(0),
		UpdatedAt:    at(5),
		Usage: llm.Usage{InputTokens: 10, OutputTokens: 20, CacheReadTokens: 30, CacheWriteTokens: 40,
			ReasoningTokens: 5, Reported: true},
		CostUSD:  0.125,
		APICalls: 3,
	}
	in := want
	if err := s.CreateSession(ctx(t), &in); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	got := getSession(t, s, want.ID)
	if err := sameSession(want, *got); err != nil {
		t.Fatal(err)
	}
	if !got.Live() {
		t.Fatal("new session is not live")
	}
	// Times come back as the same instant with nanoseconds intact.
	if got.StartedAt.Nanosecond() != base.Nanosecond() {
		t.Fatalf("StartedAt nanoseconds = %d, want %d", got.StartedAt.Nanosecond(), base.Nanosecond())
	}
}

func testCreateFillsDefaults(t *testing.T, s store.SessionService) {
	before := time.Now().Add(-time.Minute)
	a := newSession(t, s)
	b := newSession(t, s)
	if a.ID == "" || b.ID == "" || a.ID == b.ID {
		t.Fatalf("ids not assigned or not unique: %q, %q", a.ID, b.ID)
	}
	if a.StartedAt.Before(before) || a.UpdatedAt.Before(before) {
		t.Fatalf("StartedAt/UpdatedAt not filled: %v / %v", a.StartedAt, a.UpdatedAt)
	}
	got := getSession(t, s, a.ID)
	if !got.StartedAt.Equal(a.StartedAt) {
		t.Fatalf("StartedAt read back %v, assigned %v", got.StartedAt, a.StartedAt)
	}
}

func testCreateDuplicateFails(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	dup := &store.Session{ID: a.ID, Title: "other"}
	if err := s.CreateSession(ctx(t), dup); err == nil {
		t.Fatal("creating a duplicate id succeeded")
	}
	if got := getSession(t, s, a.ID); got.Title != a.Title {
		t.Fatalf("duplicate create changed the title to %q", got.Title)
	}
}

func testSessionNotFound(t *testing.T, s store.SessionService) {
	const id = "no-such-session"
	c := ctx(t)
	_, err := s.GetSession(c, id)
	wantKind(t, "GetSession", err, store.ErrNotFound, store.KindNotFound)
	wantKind(t, "SetTitle", s.SetTitle(c, id, "x"), store.ErrNotFound, store.KindNotFound)
	wantKind(t, "EndSession", s.EndSession(c, id, store.EndUser), store.ErrNotFound, store.KindNotFound)
	wantKind(t, "AddUsage", s.AddUsage(c, id, llm.Usage{InputTokens: 1}, 0, 1), store.ErrNotFound, store.KindNotFound)
	wantKind(t, "DeleteSession", s.DeleteSession(c, id), store.ErrNotFound, store.KindNotFound)
	_, err = s.Messages(c, id, store.MessageQuery{})
	wantKind(t, "Messages", err, store.ErrNotFound, store.KindNotFound)
	_, err = s.AcquireLease(c, id, "h", time.Minute)
	wantKind(t, "AcquireLease", err, store.ErrNotFound, store.KindNotFound)
}

func testListOrderPaging(t *testing.T, s store.SessionService) {
	// Created out of order; listing sorts by UpdatedAt, newest first.
	for _, n := range []int{3, 1, 4, 0, 2} {
		newSession(t, s, func(ss *store.Session) {
			ss.ID = fmt.Sprintf("s%d", n)
			ss.StartedAt = at(0)
			ss.UpdatedAt = at(n)
		})
	}
	tests := []struct {
		name string
		opt  store.ListOptions
		want []string
	}{
		{"all", store.ListOptions{}, []string{"s4", "s3", "s2", "s1", "s0"}},
		{"first page", store.ListOptions{Limit: 2}, []string{"s4", "s3"}},
		{"second page", store.ListOptions{Limit: 2, Offset: 2}, []string{"s2", "s1"}},
		{"last page", store.ListOptions{Limit: 2, Offset: 4}, []string{"s0"}},
		{"past the end", store.ListOptions{Limit: 2, Offset: 10}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ListSessions(ctx(t), tt.opt)
			if err != nil {
				t.Fatalf("ListSessions: %v", err)
			}
			if ids := sessionIDs(got); fmt.Sprint(ids) != fmt.Sprint(tt.want) {
				t.Fatalf("ids = %v, want %v", ids, tt.want)
			}
		})
	}
}

func testListDefaultLimit(t *testing.T, s store.SessionService) {
	for i := range 55 {
		newSession(t, s, func(ss *store.Session) { ss.ID = fmt.Sprintf("s%02d", i) })
	}
	got, err := s.ListSessions(ctx(t), store.ListOptions{})
	if err != nil {
		t.Fatalf("ListSessions: %v", err)
	}
	if len(got) != 50 {
		t.Fatalf("default page has %d sessions, want 50", len(got))
	}
}

func testListTouched(t *testing.T, s store.SessionService) {
	for _, id := range []string{"old", "mid", "new"} {
		n := map[string]int{"old": 0, "mid": 1, "new": 2}[id]
		newSession(t, s, func(ss *store.Session) { ss.ID = id; ss.StartedAt = at(n); ss.UpdatedAt = at(n) })
	}
	first := func() string {
		t.Helper()
		got, err := s.ListSessions(ctx(t), store.ListOptions{Limit: 1})
		if err != nil || len(got) != 1 {
			t.Fatalf("ListSessions: %v (%d rows)", err, len(got))
		}
		return got[0].ID
	}
	if id := first(); id != "new" {
		t.Fatalf("first = %s, want new", id)
	}
	appendMsgs(t, s, store.Fence{SessionID: "old"}, text(llm.RoleUser, "hello"))
	if id := first(); id != "old" {
		t.Fatalf("after Append, first = %s, want old", id)
	}
	if err := s.SetTitle(ctx(t), "mid", "renamed"); err != nil {
		t.Fatal(err)
	}
	if id := first(); id != "mid" {
		t.Fatalf("after SetTitle, first = %s, want mid", id)
	}
}

func testChildSessions(t *testing.T, s store.SessionService) {
	parent := newSession(t, s, func(ss *store.Session) { ss.ID = "parent" })
	// Created newest first to show the order comes from StartedAt.
	newSession(t, s, func(ss *store.Session) { ss.ID = "child-b"; ss.ParentID = parent.ID; ss.StartedAt = at(2) })
	newSession(t, s, func(ss *store.Session) { ss.ID = "child-a"; ss.ParentID = parent.ID; ss.StartedAt = at(1) })
	newSession(t, s, func(ss *store.Session) { ss.ID = "grandchild"; ss.ParentID = "child-a"; ss.StartedAt = at(3) })
	newSession(t, s, func(ss *store.Session) { ss.ID = "unrelated" })

	tests := []struct {
		id   string
		want []string
	}{
		{"parent", []string{"child-a", "child-b"}},
		{"child-a", []string{"grandchild"}},
		{"unrelated", nil},
		{"unknown", nil},
		{"", nil}, // "" means "no parent": roots are not its children
	}
	for _, tt := range tests {
		t.Run("of "+tt.id, func(t *testing.T) {
			got, err := s.ChildSessions(ctx(t), tt.id)
			if err != nil {
				t.Fatalf("ChildSessions: %v", err)
			}
			for _, c := range got {
				if c.ParentID != tt.id {
					t.Errorf("child %s has ParentID %q", c.ID, c.ParentID)
				}
			}
			if ids := sessionIDs(got); fmt.Sprint(ids) != fmt.Sprint(tt.want) {
				t.Fatalf("children = %v, want %v", ids, tt.want)
			}
		})
	}
}

func testSetTitle(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	if err := s.SetTitle(ctx(t), a.ID, "Fix the flaky test — ✓"); err != nil {
		t.Fatalf("SetTitle: %v", err)
	}
	got := getSession(t, s, a.ID)
	if got.Title != "Fix the flaky test — ✓" {
		t.Fatalf("Title = %q", got.Title)
	}
	if got.UpdatedAt.Before(a.UpdatedAt) {
		t.Fatalf("UpdatedAt went back: %v < %v", got.UpdatedAt, a.UpdatedAt)
	}
}

func testEndSession(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	if err := s.EndSession(ctx(t), a.ID, store.EndCompression); err != nil {
		t.Fatalf("EndSession: %v", err)
	}
	first := getSession(t, s, a.ID)
	if first.Live() || first.EndReason != store.EndCompression {
		t.Fatalf("after EndSession: live=%v reason=%q", first.Live(), first.EndReason)
	}
	if err := s.EndSession(ctx(t), a.ID, store.EndUser); err != nil {
		t.Fatalf("second EndSession: %v", err)
	}
	second := getSession(t, s, a.ID)
	if second.EndReason != store.EndCompression || !second.EndedAt.Equal(first.EndedAt) {
		t.Fatalf("second EndSession changed the end: reason %q at %v, want %q at %v",
			second.EndReason, second.EndedAt, store.EndCompression, first.EndedAt)
	}
}

func testAddUsage(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	c := ctx(t)
	if err := s.AddUsage(c, a.ID, llm.Usage{InputTokens: 100, OutputTokens: 10, CacheReadTokens: 1000,
		CacheWriteTokens: 50, ReasoningTokens: 4, Reported: true}, 0.25, 1); err != nil {
		t.Fatalf("AddUsage: %v", err)
	}
	if err := s.AddUsage(c, a.ID, llm.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3,
		CacheWriteTokens: 4, ReasoningTokens: 5}, 0.5, 2); err != nil {
		t.Fatalf("AddUsage: %v", err)
	}
	// Usage may still be booked after the session ended (rotation).
	if err := s.EndSession(c, a.ID, store.EndCompression); err != nil {
		t.Fatal(err)
	}
	if err := s.AddUsage(c, a.ID, llm.Usage{OutputTokens: 1}, 0, 1); err != nil {
		t.Fatalf("AddUsage on ended session: %v", err)
	}
	got := getSession(t, s, a.ID)
	want := llm.Usage{InputTokens: 101, OutputTokens: 13, CacheReadTokens: 1003, CacheWriteTokens: 54,
		ReasoningTokens: 9, Reported: true}
	if got.Usage != want {
		t.Fatalf("Usage = %+v, want %+v", got.Usage, want)
	}
	if math.Abs(got.CostUSD-0.75) > 1e-9 || got.APICalls != 4 {
		t.Fatalf("CostUSD = %v, APICalls = %d; want 0.75, 4", got.CostUSD, got.APICalls)
	}
}

func testAddUsageConcurrent(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	const workers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for range workers {
		wg.Go(func() {
			for range each {
				errs <- s.AddUsage(ctx(t), a.ID, llm.Usage{InputTokens: 1, OutputTokens: 2}, 0.5, 1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("AddUsage: %v", err)
		}
	}
	got := getSession(t, s, a.ID)
	n := int64(workers * each)
	if got.Usage.InputTokens != n || got.Usage.OutputTokens != 2*n || got.APICalls != n || got.CostUSD != float64(n)/2 {
		t.Fatalf("lost updates: %+v cost %v calls %d, want %d calls", got.Usage, got.CostUSD, got.APICalls, n)
	}
}

func testMessageCount(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	b := newSession(t, s)
	f := store.Fence{SessionID: a.ID}
	appendMsgs(t, s, f, text(llm.RoleUser, "1"), text(llm.RoleAssistant, "2"), text(llm.RoleUser, "3"))
	if err := s.Replace(ctx(t), f, 2, text(llm.RoleUser, "summary")); err != nil {
		t.Fatal(err)
	}
	appendMsgs(t, s, store.Fence{SessionID: b.ID}, text(llm.RoleUser, "other"))
	// Live and archived rows both count.
	if got := getSession(t, s, a.ID).MessageCount; got != 4 {
		t.Fatalf("GetSession MessageCount = %d, want 4", got)
	}
	list, err := s.ListSessions(ctx(t), store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, ss := range list {
		counts[ss.ID] = ss.MessageCount
	}
	if counts[a.ID] != 4 || counts[b.ID] != 1 {
		t.Fatalf("ListSessions counts = %v", counts)
	}
}

// testSessionModels: every provider/model a session's rows name, live and
// archived, in order of first use, each once; sessions without any are
// absent.
func testSessionModels(t *testing.T, s store.SessionService) {
	a, b, c := newSession(t, s), newSession(t, s), newSession(t, s)
	answer := func(provider, model string) *store.Message {
		m := text(llm.RoleAssistant, model)
		m.Provider, m.Model = provider, model
		return m
	}
	f := store.Fence{SessionID: a.ID}
	appendMsgs(t, s, f, text(llm.RoleUser, "1"), answer("openai", "m1"), answer("anthropic", "m2"))
	if err := s.Replace(ctx(t), f, 3, text(llm.RoleUser, "summary")); err != nil {
		t.Fatal(err)
	}
	appendMsgs(t, s, f, answer("openai", "m1"), answer("openai", "m3"))
	appendMsgs(t, s, store.Fence{SessionID: b.ID}, answer("openai", "m9"))
	appendMsgs(t, s, store.Fence{SessionID: c.ID}, text(llm.RoleUser, "no answer yet"))
	got, err := s.SessionModels(ctx(t), []string{a.ID, b.ID, c.ID, "nope"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]store.ModelUse{
		a.ID: {{Provider: "openai", Model: "m1"}, {Provider: "anthropic", Model: "m2"}, {Provider: "openai", Model: "m3"}},
		b.ID: {{Provider: "openai", Model: "m9"}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(want) {
		t.Fatalf("SessionModels = %v, want %v", got, want)
	}
	if got, err := s.SessionModels(ctx(t), nil); err != nil || len(got) != 0 {
		t.Fatalf("SessionModels(nil) = %v, %v", got, err)
	}
}

func testDeleteSession(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	keep := newSession(t, s)
	l := acquire(t, s, a.ID, "h")
	appendMsgs(t, s, l.Fence(), text(llm.RoleUser, "zebra crossing"))
	appendMsgs(t, s, store.Fence{SessionID: keep.ID}, text(llm.RoleUser, "zebra herd"))
	c := ctx(t)
	if err := s.DeleteSession(c, a.ID); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	_, err := s.GetSession(c, a.ID)
	wantKind(t, "GetSession after delete", err, store.ErrNotFound, store.KindNotFound)
	_, err = s.Messages(c, a.ID, store.MessageQuery{IncludeArchived: true})
	wantKind(t, "Messages after delete", err, store.ErrNotFound, store.KindNotFound)
	err = s.Append(c, l.Fence(), text(llm.RoleUser, "late"))
	wantKind(t, "Append after delete", err, store.ErrNotFound, store.KindNotFound)
	// Search is optional here (store.Searcher): where there is one, the
	// deleted session's rows are gone from it too.
	if sr, ok := s.(store.Searcher); ok {
		hits, err := sr.Search(c, "zebra", store.SearchOptions{})
		if err != nil {
			t.Fatalf("Search: %v", err)
		}
		if len(hits) != 1 || hits[0].SessionID != keep.ID {
			t.Fatalf("Search after delete = %+v, want only the kept session's row", hits)
		}
	}
	if got := load(t, s, keep.ID, store.MessageQuery{}); len(got) != 1 {
		t.Fatalf("other session lost rows: %d", len(got))
	}
}

// testChildKinds: a session's Kind is stored verbatim and comes back with
// its children, so a caller can tell delegated children and reviews from
// compression continuations.
func testChildKinds(t *testing.T, s store.SessionService) {
	parent := newSession(t, s, func(ss *store.Session) { ss.ID = "parent" })
	kinds := map[string]string{"cont": "", "sub": store.SessionSubagent, "rev": store.SessionReview}
	for i, id := range []string{"cont", "sub", "rev"} {
		newSession(t, s, func(ss *store.Session) {
			ss.ID = id
			ss.ParentID = parent.ID
			ss.Kind = kinds[id]
			ss.StartedAt = at(i + 1)
		})
	}
	got, err := s.ChildSessions(ctx(t), parent.ID)
	if err != nil {
		t.Fatalf("ChildSessions: %v", err)
	}
	if len(got) != 3 {
		t.Fatalf("children = %d, want 3", len(got))
	}
	for _, c := range got {
		if c.Kind != kinds[c.ID] {
			t.Errorf("child %s Kind = %q, want %q", c.ID, c.Kind, kinds[c.ID])
		}
		if g := getSession(t, s, c.ID); g.Kind != kinds[c.ID] {
			t.Errorf("GetSession(%s).Kind = %q, want %q", c.ID, g.Kind, kinds[c.ID])
		}
	}
	if parent := getSession(t, s, parent.ID); parent.Kind != "" {
		t.Errorf("parent Kind = %q, want empty", parent.Kind)
	}
}

// testResolveTipSkipsSubagents: a live subagent or review child is never
// taken for the continuation of a compressed session.
func testResolveTipSkipsSubagents(t *testing.T, s store.SessionService) {
	root := newSession(t, s, func(ss *store.Session) { ss.ID = "root" })
	newSession(t, s, func(ss *store.Session) { ss.ID = "tip"; ss.ParentID = root.ID; ss.StartedAt = at(1) })
	newSession(t, s, func(ss *store.Session) {
		ss.ID = "sub"
		ss.ParentID = root.ID
		ss.Kind = store.SessionSubagent
		ss.StartedAt = at(2)
	})
	newSession(t, s, func(ss *store.Session) {
		ss.ID = "rev"
		ss.ParentID = root.ID
		ss.Kind = store.SessionReview
		ss.StartedAt = at(3)
	})
	if err := s.EndSession(ctx(t), root.ID, store.EndCompression); err != nil {
		t.Fatalf("EndSession: %v", err)
	}
	tip, err := store.ResolveTip(ctx(t), s, root.ID)
	if err != nil {
		t.Fatalf("ResolveTip: %v", err)
	}
	if tip.ID != "tip" {
		t.Fatalf("tip = %s, want tip (children of other kinds are not continuations)", tip.ID)
	}
}
