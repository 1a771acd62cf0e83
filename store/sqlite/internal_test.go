package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// fakeCode stands in for the driver's *sqlite.Error, whose fields are not
// settable from outside its package.
type fakeCode int

func (c fakeCode) Error() string { return fmt.Sprintf("sqlite error %d", int(c)) }
func (c fakeCode) Code() int     { return int(c) }

func TestKindOf(t *testing.T) {
	tmp := t.TempDir()
	tests := []struct {
		name string
		err  error
		path string
		want store.ErrorKind
	}{
		{"full", fakeCode(codeFull), "", store.KindDiskFull},
		{"busy", fakeCode(codeBusy), "", store.KindLocked},
		{"busy snapshot (extended)", fakeCode(codeBusy | 2<<8), "", store.KindLocked},
		{"locked", fakeCode(codeLocked), "", store.KindLocked},
		{"corrupt", fakeCode(codeCorrupt), "", store.KindCorrupt},
		{"corrupt vtab (extended)", fakeCode(codeCorrupt | 1<<8), "", store.KindCorrupt},
		{"not a database", fakeCode(codeNotADB), "", store.KindCorrupt},
		{"read-only", fakeCode(codeReadOnly), "", store.KindReadOnly},
		{"read-only dbmoved (extended)", fakeCode(codeReadOnly | 4<<8), "", store.KindReadOnly},
		{"permission", fakeCode(codePerm), "", store.KindReadOnly},
		{"cantopen in a writable dir", fakeCode(codeCantOpen), filepath.Join(tmp, "x.db"), store.KindOther},
		{"generic error", fakeCode(1), "", store.KindOther},
		{"disk full while opening: IOERR_SHMSIZE (4874)", fakeCode(4874), "", store.KindDiskFull},
		{"IOERR_WRITE (file-size limit)", fakeCode(778), "", store.KindDiskFull},
		{"IOERR_FSYNC", fakeCode(1034), "", store.KindDiskFull},
		{"IOERR_TRUNCATE", fakeCode(1546), "", store.KindDiskFull},
		{"a plain IOERR is not a full disk", fakeCode(codeIOErr), "", store.KindOther},
		{"EFBIG", &os.PathError{Op: "write", Path: "/x", Err: syscall.EFBIG}, "", store.KindDiskFull},
		{"wrapped code", fmt.Errorf("exec: %w", fakeCode(codeFull)), "", store.KindDiskFull},
		{"closed", errClosed, "", store.KindClosed},
		{"closed pool", errors.New("sql: database is closed"), "", store.KindClosed},
		{"os permission", &os.PathError{Op: "open", Path: "/x", Err: os.ErrPermission}, "", store.KindReadOnly},
		{"ENOSPC", &os.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC}, "", store.KindDiskFull},
		{"cancelled", fmt.Errorf("x: %w", context.Canceled), "", store.KindOther},
		{"other", errors.New("boom"), "", store.KindOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := kindOf(tt.err, tt.path); got != tt.want {
				t.Fatalf("kindOf(%v) = %s, want %s", tt.err, got, tt.want)
			}
		})
	}
}

func TestCantOpenReadOnlyDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	if writable(dir + "/x.db") {
		// Root (and some CI sandboxes) may write anywhere; the mapping is
		// then covered by TestKindOf only.
		t.Skip("this process can write to a 0500 directory (running as root?)")
	}
	if got := kindOfCode(codeCantOpen, filepath.Join(dir, "x.db")); got != store.KindReadOnly {
		t.Fatalf("cantopen in a read-only dir = %s", got)
	}
}

func TestFTSQuery(t *testing.T) {
	tests := []struct{ in, want string }{
		{"foo", `"foo"`},
		{"foo bar", `"foo" "bar"`},
		{`"foo AND (`, `"""foo" "AND"`},
		{`say "hi"`, `"say" """hi"""`},
		{"pref*", `"pref"*`},
		{"*", ""},
		{"  \t\n ", ""},
		{"( ) - + ^ :", ""},
		{"col:value", `"col:value"`},
		{"café 寿司", `"café" "寿司"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := ftsQuery(tt.in); got != tt.want {
				t.Fatalf("ftsQuery(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

// onWriter runs fn on the store's writer connection, in a transaction.
func onWriter(t *testing.T, s *Store, fn func(ctx context.Context, tx *wtx) error) {
	t.Helper()
	if err := s.write(t.Context(), "test", fn); err != nil {
		t.Fatal(err)
	}
}

func openInternal(t *testing.T, opt Options) *Store {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "state.db"), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestPragmas(t *testing.T) {
	tests := []struct {
		sync string
		want int // PRAGMA synchronous: 1 NORMAL, 2 FULL
	}{{"", 1}, {"normal", 1}, {"FULL", 2}}
	for _, tt := range tests {
		t.Run("synchronous="+tt.sync, func(t *testing.T) {
			s := openInternal(t, Options{Synchronous: tt.sync})
			var (
				mode string
				sync int
				fk   int
			)
			onWriter(t, s, func(ctx context.Context, tx *wtx) error {
				if err := tx.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
					return err
				}
				if err := tx.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
					return err
				}
				return tx.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk)
			})
			if mode != "wal" || sync != tt.want || fk != 1 {
				t.Fatalf("journal_mode=%s synchronous=%d foreign_keys=%d, want wal %d 1", mode, sync, tt.want, fk)
			}
		})
	}
}

func TestIndexFollowsRows(t *testing.T) {
	s := openInternal(t, Options{})
	ctx := t.Context()
	if err := s.CreateSession(ctx, &store.Session{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	f := store.Fence{SessionID: "a"}
	msg := func(text string) *store.Message { return &store.Message{Message: llm.NewText(llm.RoleUser, text)} }
	indexed := func() int {
		t.Helper()
		var n int
		onWriter(t, s, func(ctx context.Context, tx *wtx) error {
			return tx.QueryRowContext(ctx, `SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'quince'`).Scan(&n)
		})
		return n
	}
	check := func(step string) {
		t.Helper()
		err := s.write(ctx, "test", func(ctx context.Context, tx *wtx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)`)
			return err
		})
		if err != nil {
			t.Fatalf("%s: FTS index out of step with messages: %v", step, err)
		}
	}
	catchUp := func() {
		t.Helper()
		if err := s.catchUpIndex(ctx); err != nil {
			t.Fatal(err)
		}
	}

	m1, m2 := msg("quince jam"), msg("quince tart")
	if err := s.Append(ctx, f, m1, m2); err != nil {
		t.Fatal(err)
	}
	if n := indexed(); n != 0 {
		t.Fatalf("a small append was indexed at once (%d rows); indexing is meant to be batched", n)
	}
	catchUp()
	if n := indexed(); n != 2 {
		t.Fatalf("after catch-up indexed rows = %d, want 2", n)
	}
	check("catch-up")

	// A row deleted before it was indexed never reaches the index.
	m3 := msg("quince pie")
	if err := s.Append(ctx, f, m3); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, f, m3.ID); err != nil {
		t.Fatal(err)
	}
	catchUp()
	check("delete before indexing")
	if n := indexed(); n != 2 {
		t.Fatalf("indexed rows = %d, want 2", n)
	}

	if err := s.Replace(ctx, f, 10); err != nil { // archiving keeps rows indexed
		t.Fatal(err)
	}
	if err := s.Delete(ctx, f, m1.ID); err != nil {
		t.Fatal(err)
	}
	check("delete")
	if n := indexed(); n != 1 {
		t.Fatalf("after Delete indexed rows = %d, want 1", n)
	}

	// Appends index their own backlog once it reaches a batch.
	for i := range ftsBatch {
		if err := s.Append(ctx, f, msg(fmt.Sprint("quince ", i))); err != nil {
			t.Fatal(err)
		}
	}
	if n := indexed(); n <= 1 {
		t.Fatalf("after %d single appends nothing new was indexed", ftsBatch)
	}
	catchUp()
	check("batch")
	if n := indexed(); n != 1+ftsBatch {
		t.Fatalf("after catch-up indexed rows = %d, want %d", n, 1+ftsBatch)
	}

	if err := s.DeleteSession(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	check("delete session")
	if n := indexed(); n != 0 {
		t.Fatalf("after DeleteSession indexed rows = %d, want 0", n)
	}
}

func TestTimesStoredAsUnixNanos(t *testing.T) {
	s := openInternal(t, Options{})
	ctx := t.Context()
	created := sqlrows.FromNanos(1_616_000_000_123_456_789)
	if err := s.CreateSession(ctx, &store.Session{ID: "a", StartedAt: created}); err != nil {
		t.Fatal(err)
	}
	m := &store.Message{Message: llm.NewText(llm.RoleUser, "x"), CreatedAt: created}
	if err := s.Append(ctx, store.Fence{SessionID: "a"}, m); err != nil {
		t.Fatal(err)
	}
	var started, msg int64
	if err := s.r.QueryRowContext(ctx, `SELECT s.started_at, m.created_at FROM sessions s JOIN messages m
		ON m.session_id = s.id`).Scan(&started, &msg); err != nil {
		t.Fatal(err)
	}
	if started != 1_616_000_000_123_456_789 || msg != started {
		t.Fatalf("stored times %d / %d", started, msg)
	}
}

// TestWritesBeginImmediate shows a write transaction holds the write lock
// from BEGIN: a deferred one would read first and could then fail with
// SQLITE_BUSY_SNAPSHOT against another process instead of waiting.
func TestWritesBeginImmediate(t *testing.T) {
	s := openInternal(t, Options{})
	other, err := sql.Open("sqlite", s.path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	onWriter(t, s, func(ctx context.Context, _ *wtx) error {
		conn, err := other.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		_, err = conn.ExecContext(ctx, `BEGIN IMMEDIATE`)
		if err == nil {
			_, _ = conn.ExecContext(ctx, `ROLLBACK`)
			t.Error("another connection got the write lock while a store transaction was open")
			return nil
		}
		if k := kindOf(err, s.path); k != store.KindLocked {
			t.Errorf("competing BEGIN IMMEDIATE = %v (kind %s), want locked", err, k)
		}
		return nil
	})
}

// TestCancelDuringWriteRollsBack: the statements of a write run without
// cancellation, so ctx is checked before COMMIT instead.
func TestCancelDuringWriteRollsBack(t *testing.T) {
	s := openInternal(t, Options{})
	if err := s.CreateSession(t.Context(), &store.Session{ID: "a", Title: "before"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	err := s.write(ctx, "test", func(wctx context.Context, tx *wtx) error {
		_, err := tx.ExecContext(wctx, `UPDATE sessions SET title = 'after' WHERE id = 'a'`)
		cancel()
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("write cancelled before COMMIT = %v, want context.Canceled", err)
	}
	got, err := s.GetSession(t.Context(), "a")
	if err != nil || got.Title != "before" {
		t.Fatalf("title = %q (%v), want the write rolled back", got.Title, err)
	}
	// The writer connection is left usable.
	if err := s.SetTitle(t.Context(), "a", "later"); err != nil {
		t.Fatalf("write after a cancelled one: %v", err)
	}
}

// A generated session id that is already taken (two processes drawing the
// same id) is replaced by a fresh one instead of failing the insert; an id
// the caller chose still fails.
func TestCreateSessionRetriesTakenID(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first := &store.Session{}
	if err := s.CreateSession(ctx, first); err != nil {
		t.Fatal(err)
	}
	draws := 0
	s.newID = func(now time.Time) string {
		draws++
		if draws <= 2 {
			return first.ID // collide twice
		}
		return store.NewID(now)
	}
	second := &store.Session{}
	if err := s.CreateSession(ctx, second); err != nil {
		t.Fatalf("a colliding generated id failed the insert: %v", err)
	}
	if second.ID == first.ID || draws != 3 {
		t.Errorf("second id %q after %d draws; want a fresh id on the third", second.ID, draws)
	}
	if err := s.CreateSession(ctx, &store.Session{ID: first.ID}); err == nil {
		t.Error("creating a chosen, existing id succeeded")
	}
}

// TestCheckpointOffTheCommitPath: the writer connection leaves WAL
// checkpoints to the background checkpointer (its own threshold is only a
// fallback), which runs one every checkpointEvery commits.
func TestCheckpointOffTheCommitPath(t *testing.T) {
	s := openInternal(t, Options{})
	ctx := t.Context()
	if err := s.CreateSession(ctx, &store.Session{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	var pages int
	onWriter(t, s, func(ctx context.Context, tx *wtx) error {
		return tx.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&pages)
	})
	if pages != fallbackCheckpoint {
		t.Fatalf("writer wal_autocheckpoint = %d, want %d", pages, fallbackCheckpoint)
	}
	for i := range 2 * checkpointEvery {
		if err := s.Append(ctx, store.Fence{SessionID: "a"}, &store.Message{Message: llm.NewText(llm.RoleUser, fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.cp.runs.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no background checkpoint after %d commits", 2*checkpointEvery)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
