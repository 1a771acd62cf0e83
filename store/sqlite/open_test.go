package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
)

// rawDB opens path with the driver directly, as another process would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestOpenCreatesPrivateDirAndFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home", ".talaria")
	path := filepath.Join(dir, "state.db")
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if s.Path() != path {
		t.Fatalf("Path() = %q, want %q", s.Path(), path)
	}
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{dir, 0o700}, {path, 0o600}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != c.mode {
			t.Errorf("%s mode = %v, want %v", c.path, got, c.mode)
		}
	}
}

func TestOpenRelativePathIsAbsolute(t *testing.T) {
	t.Chdir(t.TempDir())
	s, err := sqlite.Open(t.Context(), "rel/state.db", sqlite.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if !filepath.IsAbs(s.Path()) || !strings.HasSuffix(s.Path(), filepath.Join("rel", "state.db")) {
		t.Fatalf("Path() = %q", s.Path())
	}
}

func TestOpenOddPath(t *testing.T) {
	// '?' and '#' would end the path in a naive DSN.
	path := filepath.Join(t.TempDir(), "we?ird #dir", "state?.db")
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if err := s.CreateSession(t.Context(), &store.Session{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at the given path: %v", err)
	}
}

func TestOpenNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	garbage := []byte(strings.Repeat("this is not a database, just some bytes\x00\xff", 200))
	if err := os.WriteFile(path, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open of a garbage file succeeded")
	}
	var se *store.Error
	if !errors.As(err, &se) || se.Kind != store.KindCorrupt || se.Op != "open" || se.Path != path {
		t.Fatalf("error = %#v, want *store.Error{Op: open, Kind: corrupt, Path: %s}", err, path)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, path) || !strings.Contains(msg, "move it aside") {
		t.Fatalf("error is not one actionable line naming the file: %q", msg)
	}
	// The damaged file is left as it was for the person to inspect.
	if got, _ := os.ReadFile(path); string(got) != string(garbage) {
		t.Fatal("Open modified the damaged file")
	}
}

func TestOpenInvalidOptions(t *testing.T) {
	_, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "x.db"), sqlite.Options{Synchronous: "sometimes"})
	if err == nil || !strings.Contains(err.Error(), "synchronous") {
		t.Fatalf("Open with a bad Synchronous = %v", err)
	}
	_, err = sqlite.Open(t.Context(), "", sqlite.Options{})
	if err == nil {
		t.Fatal("Open with an empty path succeeded")
	}
}

func TestOpenUnderAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := sqlite.Open(t.Context(), filepath.Join(file, "state.db"), sqlite.Options{})
	var se *store.Error
	if !errors.As(err, &se) || se.Op != "open" {
		t.Fatalf("Open below a regular file = %v, want a *store.Error", err)
	}
}

func TestSchemaTooNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db := rawDB(t, path)
	if _, err := db.Exec(`PRAGMA user_version = 999`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = sqlite.Open(t.Context(), path, sqlite.Options{})
	var tooNew *sqlite.SchemaTooNewError
	if !errors.As(err, &tooNew) || tooNew.Found != 999 || tooNew.Known != sqlite.SchemaVersion {
		t.Fatalf("Open of a newer schema = %v, want *SchemaTooNewError{999, %d}", err, sqlite.SchemaVersion)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "upgrade talaria") {
		t.Fatalf("message = %q", err)
	}
}

func TestReopenKeepsDataAndSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	ctx := t.Context()
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := &store.Message{Message: llm.NewText(llm.RoleUser, "persist me")}
	if err := s.CreateSession(ctx, &store.Session{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	l, err := s.AcquireLease(ctx, "a", "h", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, l.Fence(), m); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = sqlite.Open(ctx, path, sqlite.Options{Synchronous: "full"})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	got, err := s.Messages(ctx, "a", store.MessageQuery{})
	if err != nil || len(got) != 1 || got[0].Text() != "persist me" {
		t.Fatalf("after reopen: %v, %v", got, err)
	}
	// The lease (and so its token) survives a restart too.
	if err := s.Append(ctx, l.Fence(), m); err != nil {
		t.Fatalf("fenced append after reopen: %v", err)
	}
	var version int
	if err := rawDB(t, path).QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != sqlite.SchemaVersion {
		t.Fatalf("user_version = %d, want %d", version, sqlite.SchemaVersion)
	}
}

func TestLockedByAnotherWriter(t *testing.T) {
	s := openTemp(t, sqlite.Options{BusyTimeout: 50 * time.Millisecond})
	ctx := t.Context()
	if err := s.CreateSession(ctx, &store.Session{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	// Another connection (as another process would) holds the write lock.
	conn, err := rawDB(t, s.Path()).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- s.Append(ctx, store.Fence{SessionID: "a"}, &store.Message{Message: llm.NewText(llm.RoleUser, "x")})
	}()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Append did not give up on a locked database")
	}
	var se *store.Error
	if !errors.As(err, &se) || se.Kind != store.KindLocked || se.Op != "append" {
		t.Fatalf("Append on a locked database = %v, want Kind locked", err)
	}
	if !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("message = %q", err)
	}
	// Reads are not blocked by the writer (WAL).
	if _, err := s.GetSession(ctx, "a"); err != nil {
		t.Fatalf("read while locked: %v", err)
	}
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, store.Fence{SessionID: "a"}, &store.Message{Message: llm.NewText(llm.RoleUser, "x")}); err != nil {
		t.Fatalf("Append after the lock was released: %v", err)
	}
}

func TestCancelledContext(t *testing.T) {
	s := openTemp(t, sqlite.Options{})
	if err := s.CreateSession(t.Context(), &store.Session{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := s.Append(ctx, store.Fence{SessionID: "a"}, &store.Message{Message: llm.NewText(llm.RoleUser, "x")})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with a cancelled context = %v", err)
	}
	if _, err := s.Messages(ctx, "a", store.MessageQuery{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Messages with a cancelled context = %v", err)
	}
	got, err := s.Messages(t.Context(), "a", store.MessageQuery{})
	if err != nil || len(got) != 0 {
		t.Fatalf("cancelled Append wrote %d rows (%v)", len(got), err)
	}
}

func TestFTS5CompiledIn(t *testing.T) {
	s := openTemp(t, sqlite.Options{})
	var used int
	if err := rawDB(t, s.Path()).QueryRow(`SELECT sqlite_compileoption_used('ENABLE_FTS5')`).Scan(&used); err != nil {
		t.Fatal(err)
	}
	if used != 1 {
		t.Fatal("this modernc.org/sqlite build lacks FTS5")
	}
}

func TestCancelWhileWaitingForLock(t *testing.T) {
	s := openTemp(t, sqlite.Options{BusyTimeout: time.Minute})
	if err := s.CreateSession(t.Context(), &store.Session{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	conn, err := rawDB(t, s.Path()).Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), `ROLLBACK`)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.SetTitle(ctx, "a", "x") }()
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("a write waiting for another process's lock ignored its context")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SetTitle = %v, want context.DeadlineExceeded", err)
	}
}
