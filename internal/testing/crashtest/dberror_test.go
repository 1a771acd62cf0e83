//go:build unix

package crashtest

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/store/sqlite"
)

// bareHome is a TALARIA_HOME whose database the test prepares itself.
func bareHome(t *testing.T) *home {
	t.Helper()
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	srv.SetDefault(model)
	h := &home{t: t, dir: t.TempDir(), ws: t.TempDir(), srv: srv, api: "openai"}
	h.db = filepath.Join(h.dir, "state.db")
	return h
}

// oneLineError checks a failed command's stderr: exit 1, one line, naming
// the database file and every phrase in wants.
func oneLineError(t *testing.T, p *proc, code int, db string, wants ...string) {
	t.Helper()
	msg := strings.TrimSpace(p.stderr.String())
	if code != exitOther {
		t.Errorf("exit %d, want %d", code, exitOther)
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("the error takes more than one line:\n%s", msg)
	}
	for _, w := range append([]string{db}, wants...) {
		if !strings.Contains(msg, w) {
			t.Errorf("the error does not say %q:\n%s", w, msg)
		}
	}
}

// A file that is not a database (or a damaged one) gives one line naming
// it and how to start fresh — for every command that opens it.
func TestDamagedDatabaseOneLine(t *testing.T) {
	h := bareHome(t)
	junk := strings.Repeat("this is not an SQLite database. ", 200)
	if err := os.WriteFile(h.db, []byte(junk), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"run", "hello"}, {"chat"}} {
		t.Run(args[0], func(t *testing.T) {
			p, code := h.run(args[0], args[1:]...)
			oneLineError(t, p, code, h.db, "damaged", "mv ")
		})
	}
	for _, args := range [][]string{{"sessions", "list"}, {"sessions", "show", "20261201-101500-a1b2c3d4e5f6"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			p, code := h.run(args[0], args[1:]...)
			oneLineError(t, p, code, h.db, "damaged", "mv ")
		})
	}
}

// A database another process keeps write-locked (longer than the busy
// timeout) gives one line naming the file and what to do — not "disk full",
// not "damaged".
func TestLockedDatabaseOneLine(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the busy timeout")
	}
	h := bareHome(t)
	st, err := sqlite.Open(t.Context(), h.db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	db, err := sql.Open("sqlite", h.db)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = conn.ExecContext(context.Background(), `ROLLBACK`) }()

	p, code := h.run("run", "hello")
	oneLineError(t, p, code, h.db, "locked by another process", "wait for it")
	if msg := p.stderr.String(); strings.Contains(msg, "disk") || strings.Contains(msg, "damaged") {
		t.Errorf("a locked database is blamed on something else: %s", msg)
	}
}

// Commands that only read work while another process keeps the database
// write-locked: they open it read-only and take no lock.
func TestReadCommandsUnderWriteLock(t *testing.T) {
	h, sid := newModelHome(t)
	if c, code := h.run("run", "--session", sid, "--quiet", quickPrompt); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, c.stderr)
	}
	db, err := sql.Open("sqlite", h.db)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = conn.ExecContext(context.Background(), `ROLLBACK`) }()
	for _, args := range [][]string{{"sessions", "list"}, {"sessions", "show", sid}, {"keys", "status"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			p, code := h.run(args[0], args[1:]...)
			if code != 0 || p.stderr.String() != "" {
				t.Errorf("exit %d under a write lock\nstdout:\n%s\nstderr:\n%s", code, p.stdout, p.stderr)
			}
		})
	}
}
