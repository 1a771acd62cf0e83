package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
)

// A database opened read-only reads while another connection holds the
// write lock and when the file itself is read-only; writes fail as
// read-only; a missing file is not created.
func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	rw, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sess := &store.Session{Title: "kept"}
	if err := rw.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	if err := rw.Append(ctx, store.Fence{SessionID: sess.ID}, &store.Message{Message: llm.NewText(llm.RoleUser, "hello there")}); err != nil {
		t.Fatal(err)
	}

	t.Run("while another process holds the write lock", func(t *testing.T) {
		lock := holdWriteLock(t, path)
		defer lock()
		ro, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: true, BusyTimeout: 200e6})
		if err != nil {
			t.Fatalf("read-only open under a write lock: %v", err)
		}
		defer ro.Close()
		list, err := ro.ListSessions(ctx, store.ListOptions{})
		if err != nil || len(list) != 1 || list[0].Title != "kept" {
			t.Fatalf("list = %+v, %v", list, err)
		}
		if err := ro.CreateSession(ctx, &store.Session{}); store.KindOf(err) != store.KindReadOnly {
			t.Errorf("write on a read-only store: %v, want KindReadOnly", err)
		}
	})
	_ = rw.Close()

	t.Run("a read-only file", func(t *testing.T) {
		if os.Getuid() == 0 {
			t.Skip("root ignores file permissions")
		}
		if err := os.Chmod(path, 0o444); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(path, 0o600)
		ro, err := sqlite.Open(ctx, path, sqlite.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("read-only open of a 0444 file: %v", err)
		}
		defer ro.Close()
		if _, err := ro.GetSession(ctx, sess.ID); err != nil {
			t.Fatalf("get: %v", err)
		}
	})
	t.Run("a missing file is not created", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "none.db")
		if _, err := sqlite.Open(ctx, missing, sqlite.Options{ReadOnly: true}); err == nil {
			t.Fatal("opened a missing file")
		}
		if _, err := os.Stat(missing); !os.IsNotExist(err) {
			t.Errorf("read-only open created %s", missing)
		}
	})
}

// holdWriteLock takes the database's write lock on a connection of its own,
// as another process in the middle of a write would, until the returned
// function is called.
func holdWriteLock(t *testing.T, path string) func() {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	return func() {
		_, _ = conn.ExecContext(ctx, "ROLLBACK")
		_ = conn.Close()
		_ = db.Close()
	}
}
