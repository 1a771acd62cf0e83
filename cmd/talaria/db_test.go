package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/pgtest"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/postgres"
	"github.com/talaria-agent/talaria/store/sqlite"
	"github.com/talaria-agent/talaria/store/storecopy"
)

// TestMain stops the throwaway PostgreSQL cluster the database tests start.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// migrationSource makes a SQLite database the way a person would: real
// turns through the CLI against the scripted model server, plus rows real
// turns rarely produce (an interrupted answer with its api_content, bytes
// PostgreSQL's text type refuses), a continuation child and a cooldown.
func migrationSource(t *testing.T, e *cliEnv) (dbPath string, sessions []string) {
	t.Helper()
	first, second := sessionsFixture(t, e)
	dbPath = filepath.Join(e.home, "state.db")
	st, err := sqlite.Open(t.Context(), dbPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f := store.Fence{SessionID: second}
	if err := st.Append(t.Context(), f,
		&store.Message{Message: llm.NewText(llm.RoleAssistant, ""), APIContent: "[response interrupted]\x00 é \xff",
			Kind: store.RowInterrupted, TurnID: "t-x"},
		&store.Message{Message: llm.NewToolResult(llm.ToolCall{ID: "c9", Name: "shell"}, "binary\x00out\xfe", true)},
	); err != nil {
		t.Fatal(err)
	}
	if err := st.EndSession(t.Context(), first, store.EndCompression); err != nil {
		t.Fatal(err)
	}
	child := &store.Session{Title: "continued", ParentID: first, Model: testModel}
	if err := st.CreateSession(t.Context(), child); err != nil {
		t.Fatal(err)
	}
	if err := st.Append(t.Context(), store.Fence{SessionID: child.ID},
		&store.Message{Message: llm.NewText(llm.RoleUser, "Summary of earlier work"), Kind: store.RowSummary, Synthetic: true}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateToken(t.Context(), &store.Token{Name: "ci", Principal: "team", Hash: "abc123"}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetCooldown(t.Context(), store.Cooldown{Provider: "openai", KeyID: "fp-1",
		Until: time.Now().Add(time.Hour), Reason: "rate_limit"}); err != nil {
		t.Fatal(err)
	}
	return dbPath, []string{first, second, child.ID}
}

func TestDBMigrate(t *testing.T) {
	e := newCLIEnv(t)
	dbPath, ids := migrationSource(t, e)
	pg := pgtest.New(t)
	from := "sqlite://" + dbPath

	out := e.run("", "db", "migrate", "--from", from, "--to", pg, "--json")
	if out.code != exitOK {
		t.Fatalf("db migrate: exit %d\n%s", out.code, out.stderr)
	}
	var rep storecopy.Report
	if err := json.Unmarshal([]byte(out.stdout), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out.stdout)
	}
	if rep.Sessions != 3 || rep.Copied != 3 || rep.Lineage != 1 || rep.Cooldowns != 1 || rep.Tokens != 1 || rep.Checksum == "" {
		t.Fatalf("report = %+v", rep)
	}

	// Every row reads back identical, api_content byte for byte.
	src, err := sqlite.Open(t.Context(), dbPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := postgres.Open(t.Context(), pg, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	var total int64
	sawAPIContent := false
	for _, id := range ids {
		want, err := src.Messages(t.Context(), id, store.MessageQuery{IncludeArchived: true})
		if err != nil {
			t.Fatal(err)
		}
		got, err := dst.Messages(t.Context(), id, store.MessageQuery{IncludeArchived: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("session %s: %d rows copied of %d", id, len(got), len(want))
		}
		for i := range want {
			w, g := want[i], got[i]
			if w.APIContent != "" {
				sawAPIContent = true
			}
			if g.APIContent != w.APIContent {
				t.Fatalf("session %s row %d: api_content %q, want %q", id, i, g.APIContent, w.APIContent)
			}
			w.ID, g.ID = 0, 0
			if !w.CreatedAt.Equal(g.CreatedAt) {
				t.Fatalf("session %s row %d: created %v, want %v", id, i, g.CreatedAt, w.CreatedAt)
			}
			w.CreatedAt, g.CreatedAt = time.Time{}, time.Time{}
			if !reflect.DeepEqual(w, g) {
				t.Fatalf("session %s row %d differs:\n got  %#v\n want %#v", id, i, g, w)
			}
		}
		total += int64(len(want))
		ws, _ := src.GetSession(t.Context(), id)
		gs, err := dst.GetSession(t.Context(), id)
		if err != nil || gs.ParentID != ws.ParentID || gs.EndReason != ws.EndReason || gs.Usage != ws.Usage ||
			gs.SystemPrompt != ws.SystemPrompt || !gs.UpdatedAt.Equal(ws.UpdatedAt) {
			t.Fatalf("session %s: got %+v, want %+v (%v)", id, gs, ws, err)
		}
	}
	if !sawAPIContent || rep.Messages != total {
		t.Fatalf("api_content seen %v; report messages %d, counted %d", sawAPIContent, rep.Messages, total)
	}

	t.Run("rerun is idempotent", func(t *testing.T) {
		out := e.run("", "db", "migrate", "--from", from, "--to", pg, "--json")
		var again storecopy.Report
		if out.code != exitOK || json.Unmarshal([]byte(out.stdout), &again) != nil {
			t.Fatalf("rerun: exit %d\n%s%s", out.code, out.stdout, out.stderr)
		}
		if again.Copied != 0 || again.Skipped != 3 || again.Tokens != 0 || again.Checksum != rep.Checksum {
			t.Fatalf("rerun report = %+v, want nothing copied and the same checksum", again)
		}
	})
	t.Run("non-empty target refused without --append", func(t *testing.T) {
		other := pgtest.New(t)
		st, err := postgres.Open(t.Context(), other, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CreateSession(t.Context(), &store.Session{ID: "someone-elses"}); err != nil {
			t.Fatal(err)
		}
		st.Close()
		out := e.run("", "db", "migrate", "--from", from, "--to", other)
		if out.code != exitUsage || !strings.Contains(out.stderr, "--append") {
			t.Fatalf("exit %d, want %d naming --append:\n%s", out.code, exitUsage, out.stderr)
		}
		out = e.run("", "db", "migrate", "--from", from, "--to", other, "--append")
		if out.code != exitOK || !strings.Contains(out.stdout, "copied 3 sessions") {
			t.Fatalf("--append: exit %d\n%s%s", out.code, out.stdout, out.stderr)
		}
	})
	t.Run("commands use the PostgreSQL database", func(t *testing.T) {
		// --database on sessions.
		out := e.run("", "sessions", "list", "--database", pg, "--json")
		var list []sessionOut
		if out.code != exitOK || json.Unmarshal([]byte(out.stdout), &list) != nil || len(list) != 3 {
			t.Fatalf("sessions list --database: exit %d\n%s%s", out.code, out.stdout, out.stderr)
		}
		// TALARIA_DATABASE_URL for run: a new turn lands in PostgreSQL,
		// not in the SQLite file.
		e.env["TALARIA_DATABASE_URL"] = pg
		defer delete(e.env, "TALARIA_DATABASE_URL")
		e.srv.Script(fakellm.Text("Stored in PostgreSQL."))
		res := decodeResult(t, e.runTurn("openai", []string{"--json"}, "where are you stored?"))
		if res.SessionID == "" {
			t.Fatal("no session")
		}
		if _, err := dst.GetSession(t.Context(), res.SessionID); err != nil {
			t.Fatalf("the turn's session is not in PostgreSQL: %v", err)
		}
		if _, err := src.GetSession(t.Context(), res.SessionID); err == nil {
			t.Fatal("the turn's session went to the SQLite file")
		}
		out = e.run("", "doctor")
		if !strings.Contains(out.stdout, "database: PostgreSQL postgres://") {
			t.Fatalf("doctor does not name the PostgreSQL database:\n%s", out.stdout)
		}
	})
	t.Run("usage errors", func(t *testing.T) {
		for _, args := range [][]string{
			{"db"},
			{"db", "migrate", "--to", pg},
			{"db", "migrate", "--from", pg, "--to", pg},
			{"db", "migrate", "--from", from, "--to", "sqlite:///tmp/x.db"},
		} {
			if out := e.run("", args...); out.code != exitUsage {
				t.Errorf("%v: exit %d, want %d\n%s", args, out.code, exitUsage, out.stderr)
			}
		}
	})
}

// An unreachable PostgreSQL is one line that says so, exit 1.
func TestDatabaseUnreachable(t *testing.T) {
	e := newCLIEnv(t)
	out := e.run("", "sessions", "list", "--database", "postgres://talaria@127.0.0.1:1/none?connect_timeout=5")
	if out.code != exitOther || !strings.Contains(out.stderr, "cannot be reached") || strings.Count(strings.TrimSpace(out.stderr), "\n") != 0 {
		t.Fatalf("exit %d:\n%s", out.code, out.stderr)
	}
}

// What a user would miss after the move comes along: the workspace memory
// (`memory list`) and the turn event logs (`trace`), each verified and
// counted in the report; a rerun copies neither twice.
func TestDBMigrateKeepsMemoryAndTurnEvents(t *testing.T) {
	e := newCLIEnv(t)
	dbPath, ids := migrationSource(t, e)
	if out := e.run("", "memory", "add", "--workspace", e.ws, "the tests need -race"); out.code != exitOK {
		t.Fatalf("memory add: exit %d\n%s", out.code, out.stderr)
	}
	if out := e.run("", "memory", "add", "--workspace", e.ws, "--user", "alice", "alice prefers tabs"); out.code != exitOK {
		t.Fatalf("memory add --user: exit %d\n%s", out.code, out.stderr)
	}
	trace := e.run("", "trace", ids[0])
	if trace.code != exitOK || !strings.Contains(trace.stdout, "read_file") {
		t.Fatalf("trace before the move: exit %d\n%s%s", trace.code, trace.stdout, trace.stderr)
	}
	pg := pgtest.New(t)
	for run := range 2 {
		out := e.run("", "db", "migrate", "--from", "sqlite://"+dbPath, "--to", pg, "--json")
		var rep storecopy.Report
		if out.code != exitOK || json.Unmarshal([]byte(out.stdout), &rep) != nil {
			t.Fatalf("db migrate #%d: exit %d\n%s%s", run+1, out.code, out.stdout, out.stderr)
		}
		if rep.Memories != 2 || rep.TurnEvents == 0 {
			t.Fatalf("db migrate #%d: report %+v, want 2 memory entries and the turn events", run+1, rep)
		}
	}

	e.env["TALARIA_DATABASE_URL"] = pg
	defer delete(e.env, "TALARIA_DATABASE_URL")
	mem := e.run("", "memory", "list", "--workspace", e.ws, "--user", "alice")
	if mem.code != exitOK || !strings.Contains(mem.stdout, "the tests need -race") || !strings.Contains(mem.stdout, "alice prefers tabs") ||
		strings.Count(mem.stdout, "the tests need -race") != 1 {
		t.Fatalf("memory list after the move: exit %d\n%s%s", mem.code, mem.stdout, mem.stderr)
	}
	after := e.run("", "trace", ids[0])
	if after.code != exitOK || after.stdout != trace.stdout {
		t.Fatalf("trace after the move: exit %d\n%s%s\nbefore:\n%s", after.code, after.stdout, after.stderr, trace.stdout)
	}
}
