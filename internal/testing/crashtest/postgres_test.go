//go:build unix

package crashtest

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/pgtest"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/postgres"
	"github.com/talaria-agent/talaria/store/sqlite"
)

// freshRows reads a session's rows through a newly opened store, after
// checking a SQLite file's integrity: what a process starting after a
// crash would see.
func (h *home) freshRows(t *testing.T, sid string) []store.Message {
	t.Helper()
	var (
		st  store.Store
		err error
	)
	if h.dbURL != "" {
		st, err = postgres.Open(t.Context(), h.dbURL, postgres.Options{})
	} else {
		checkIntegrity(t, h.db)
		st, err = sqlite.Open(t.Context(), h.db, sqlite.Options{})
	}
	if err != nil {
		t.Fatalf("the database does not open after the kill: %v", err)
	}
	defer st.Close()
	rows, err := st.Messages(t.Context(), sid, store.MessageQuery{IncludeArchived: true})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// newPostgresHome is newHome on a PostgreSQL database: the processes get
// it as TALARIA_DATABASE_URL.
func newPostgresHome(t *testing.T, srv *fakellm.Server) *home {
	t.Helper()
	base := pgtestBase(t)
	h := &home{t: t, dir: t.TempDir(), ws: t.TempDir(), srv: srv, api: "openai"}
	h.dbURL = pgtest.NewOn(t, base)
	st, err := postgres.Open(t.Context(), h.dbURL, postgres.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", postgres.Redact(h.dbURL), err)
	}
	t.Cleanup(func() { _ = st.Close() })
	h.reader = st
	return h
}

// pgtestBase is TALARIA_TEST_POSTGRES_URL, or a cluster of the test's own.
func pgtestBase(t *testing.T) string {
	t.Helper()
	if v := os.Getenv(pgtest.EnvURL); v != "" {
		return v
	}
	return pgtest.StartOwn(t).URL()
}

// TestKillAnywherePostgres is TestKillAnywhere on PostgreSQL, at fewer
// points: a `talaria run` killed with SIGKILL anywhere in a multi-tool turn
// leaves every committed row intact, and the next process resumes the
// session with a request the strict model server accepts.
func TestKillAnywherePostgres(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	srv.SetDefault(model)
	h := newPostgresHome(t, srv)

	sid := h.newSession()
	start := time.Now()
	p, code := h.run("run", "--session", sid, "--yes", "--quiet", taskPrompt)
	full := time.Since(start)
	if code != 0 || !p.stdout.Contains(finalAnswer) {
		t.Fatalf("uninterrupted run: exit %d\nstdout:\n%s\nstderr:\n%s", code, p.stdout, p.stderr)
	}
	requests := len(srv.Requests())
	checkWire(t, srv)

	points := max(crashPoints(t)/3, 4)
	phases := map[string]int{}
	for i, plan := range plans(points, full, requests) {
		api := []string{"openai", "anthropic"}[i%2]
		t.Run(fmt.Sprintf("%02d_%s_%s", i, api, strings.ReplaceAll(plan.String(), " ", "_")), func(t *testing.T) {
			h.t, h.api = t, api
			phase, _, _ := killAndResume(t, h, plan)
			phases[phase]++
		})
	}
	h.t = t
	t.Logf("kills by the last committed row: %v", phases)
}
