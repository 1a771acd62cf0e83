package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/slicesx"
	"github.com/talaria-agent/talaria/store"
)

var memoryCases = []testCase[store.Memories]{
	{"AddListRoundTrip", testMemoryRoundTrip},
	{"WorkspaceAndUserScopes", testMemoryScopes},
	{"DeleteScopedToWorkspace", testMemoryDelete},
	{"ClearRemovesWhatListShows", testMemoryClear},
}

func addMemory(t *testing.T, s store.Memories, e store.MemoryEntry) store.MemoryEntry {
	t.Helper()
	if err := s.AddMemory(ctx(t), &e); err != nil {
		t.Fatalf("AddMemory: %v", err)
	}
	if e.ID == 0 {
		t.Fatal("AddMemory assigned no ID")
	}
	return e
}

func memoryTexts(t *testing.T, s store.Memories, q store.MemoryQuery) []string {
	t.Helper()
	got, err := s.Memories(ctx(t), q)
	if err != nil {
		t.Fatalf("Memories: %v", err)
	}
	return slicesx.Map(got, func(e store.MemoryEntry) string { return e.Text })
}

// testMemoryRoundTrip: every field comes back as written (times to the
// nanosecond), entries list oldest first, and a zero CreatedAt is filled.
func testMemoryRoundTrip(t *testing.T, s store.Memories) {
	want := addMemory(t, s, store.MemoryEntry{Workspace: "/ws/ünï", Text: "Use tabs — \"always\"\nsecond line 🚀",
		SourceSession: "20210314-150926-abcdef", CreatedAt: at(1)})
	second := addMemory(t, s, store.MemoryEntry{Workspace: "/ws/ünï", Text: "tests run with -race"})
	if second.ID <= want.ID {
		t.Fatalf("IDs do not grow: %d then %d", want.ID, second.ID)
	}
	if second.CreatedAt.IsZero() || time.Since(second.CreatedAt) > time.Hour {
		t.Fatalf("CreatedAt not filled with now: %v", second.CreatedAt)
	}
	got, err := s.Memories(ctx(t), store.MemoryQuery{Workspace: "/ws/ünï"})
	if err != nil {
		t.Fatalf("Memories: %v", err)
	}
	if len(got) != 2 {
		t.Fatalf("entries = %d, want 2", len(got))
	}
	g := got[0]
	if !g.CreatedAt.Equal(want.CreatedAt) {
		t.Fatalf("CreatedAt = %v, want %v", g.CreatedAt, want.CreatedAt)
	}
	g.CreatedAt, want.CreatedAt = time.Time{}, time.Time{}
	if g != want {
		t.Fatalf("entry = %#v, want %#v", g, want)
	}
	if got[1].ID != second.ID {
		t.Fatalf("second entry = %d, want %d (oldest first)", got[1].ID, second.ID)
	}
}

// testMemoryScopes: workspaces never see each other's entries; a query
// without a user sees only shared entries, one with a user sees the shared
// ones and that user's, never another user's.
func testMemoryScopes(t *testing.T, s store.Memories) {
	addMemory(t, s, store.MemoryEntry{Workspace: "/a", Text: "shared-a"})
	addMemory(t, s, store.MemoryEntry{Workspace: "/a", User: "ann", Text: "ann-a"})
	addMemory(t, s, store.MemoryEntry{Workspace: "/a", User: "bob", Text: "bob-a"})
	addMemory(t, s, store.MemoryEntry{Workspace: "/b", Text: "shared-b"})
	tests := []struct {
		q    store.MemoryQuery
		want []string
	}{
		{store.MemoryQuery{Workspace: "/a"}, []string{"shared-a"}},
		{store.MemoryQuery{Workspace: "/a", User: "ann"}, []string{"shared-a", "ann-a"}},
		{store.MemoryQuery{Workspace: "/a", User: "bob"}, []string{"shared-a", "bob-a"}},
		{store.MemoryQuery{Workspace: "/b", User: "ann"}, []string{"shared-b"}},
		{store.MemoryQuery{Workspace: "/c"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.q.Workspace+"/"+tt.q.User, func(t *testing.T) {
			if got := memoryTexts(t, s, tt.q); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("entries = %q, want %q", got, tt.want)
			}
		})
	}
}

// testMemoryDelete: an entry is deleted only through its own workspace;
// an unknown id, or one of another workspace, is ErrNotFound.
func testMemoryDelete(t *testing.T, s store.Memories) {
	e := addMemory(t, s, store.MemoryEntry{Workspace: "/a", Text: "one"})
	addMemory(t, s, store.MemoryEntry{Workspace: "/a", Text: "two"})
	wantKind(t, "DeleteMemory other workspace", s.DeleteMemory(ctx(t), "/b", e.ID), store.ErrNotFound, store.KindNotFound)
	wantKind(t, "DeleteMemory unknown", s.DeleteMemory(ctx(t), "/a", e.ID+1000), store.ErrNotFound, store.KindNotFound)
	if err := s.DeleteMemory(ctx(t), "/a", e.ID); err != nil {
		t.Fatalf("DeleteMemory: %v", err)
	}
	if got := memoryTexts(t, s, store.MemoryQuery{Workspace: "/a"}); fmt.Sprint(got) != "[two]" {
		t.Fatalf("after delete = %q, want [two]", got)
	}
	wantKind(t, "DeleteMemory twice", s.DeleteMemory(ctx(t), "/a", e.ID), store.ErrNotFound, store.KindNotFound)
}

// testMemoryClear: ClearMemory removes exactly what Memories lists for the
// same query and says how many.
func testMemoryClear(t *testing.T, s store.Memories) {
	addMemory(t, s, store.MemoryEntry{Workspace: "/a", Text: "shared"})
	addMemory(t, s, store.MemoryEntry{Workspace: "/a", User: "ann", Text: "ann"})
	addMemory(t, s, store.MemoryEntry{Workspace: "/a", User: "bob", Text: "bob"})
	addMemory(t, s, store.MemoryEntry{Workspace: "/b", Text: "other"})
	n, err := s.ClearMemory(ctx(t), store.MemoryQuery{Workspace: "/a", User: "ann"})
	if err != nil {
		t.Fatalf("ClearMemory: %v", err)
	}
	if n != 2 {
		t.Fatalf("cleared %d, want 2", n)
	}
	if got := memoryTexts(t, s, store.MemoryQuery{Workspace: "/a", User: "bob"}); fmt.Sprint(got) != "[bob]" {
		t.Fatalf("bob's view after clear = %q, want [bob]", got)
	}
	if got := memoryTexts(t, s, store.MemoryQuery{Workspace: "/b"}); fmt.Sprint(got) != "[other]" {
		t.Fatalf("other workspace after clear = %q, want [other]", got)
	}
	if n, err := s.ClearMemory(ctx(t), store.MemoryQuery{Workspace: "/a", User: "ann"}); err != nil || n != 0 {
		t.Fatalf("second clear = %d, %v; want 0, nil", n, err)
	}
}
