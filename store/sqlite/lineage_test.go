package sqlite_test

import (
	"errors"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
)

// TestResolveTipOverSQLite follows a real compression chain the way the turn
// engine does after an append fails with ErrEnded.
func TestResolveTipOverSQLite(t *testing.T) {
	s := openTemp(t, sqlite.Options{})
	ctx := t.Context()
	ids := []string{"root", "mid1", "mid2", "tip"}
	for i, id := range ids {
		sess := &store.Session{ID: id, StartedAt: time.Unix(int64(i+1), 0)}
		if i > 0 {
			sess.ParentID = ids[i-1]
		}
		if err := s.CreateSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
		if i < len(ids)-1 {
			if err := s.EndSession(ctx, id, store.EndCompression); err != nil {
				t.Fatal(err)
			}
		}
	}
	err := s.Append(ctx, store.Fence{SessionID: "root"}, &store.Message{})
	if !errors.Is(err, store.ErrEnded) {
		t.Fatalf("Append to the rotated root = %v, want ErrEnded", err)
	}
	tip, err := store.ResolveTip(ctx, s, "root")
	if err != nil || tip.ID != "tip" {
		t.Fatalf("ResolveTip = %v, %v; want tip", tip, err)
	}
	if err := s.EndSession(ctx, "tip", store.EndUser); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ResolveTip(ctx, s, "root"); !errors.Is(err, store.ErrEnded) {
		t.Fatalf("ResolveTip of a chain whose tip ended = %v, want ErrEnded", err)
	}
}
