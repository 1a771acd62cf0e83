package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// One rule for every path given on the command line or in the environment:
// ~ and $VAR expanded, a relative path resolved against the current
// directory (issue 25 item 8).
func TestPathFlagsFollowTheShellRule(t *testing.T) {
	route := func(e *cliEnv) []string {
		return []string{"--api", "openai", "--base-url", e.srv.OpenAIBaseURL(), "--model", testModel}
	}
	exists := func(t *testing.T, p string) {
		t.Helper()
		if _, err := os.Stat(p); err != nil {
			t.Errorf("want %s: %v", p, err)
		}
	}
	absent := func(t *testing.T, p string) {
		t.Helper()
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was created", p)
		}
	}
	t.Run("run --workspace .", func(t *testing.T) {
		e := newCLIEnv(t)
		t.Chdir(e.ws)
		e.srv.Script(fakellm.Calls(fakellm.ToolCall("write_file", `{"path":"w.txt","content":"here"}`)), fakellm.Text("written"))
		out := e.run("", append(append([]string{"run", "--yes", "--workspace", "."}, route(e)...), "write")...)
		if out.code != exitOK {
			t.Fatalf("exit %d:\n%s", out.code, out.stderr)
		}
		exists(t, filepath.Join(e.ws, "w.txt"))
	})
	t.Run("run --workspace ~/sub and --database=~/x.db", func(t *testing.T) {
		e := newCLIEnv(t)
		home := t.TempDir()
		e.env["HOME"] = home
		if err := os.Mkdir(filepath.Join(home, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Chdir(e.ws)
		e.srv.Script(fakellm.Calls(fakellm.ToolCall("write_file", `{"path":"w.txt","content":"here"}`)), fakellm.Text("written"))
		out := e.run("", append(append([]string{"run", "--yes", "--workspace", "~/sub", "--database=~/x.db"}, route(e)...), "write")...)
		if out.code != exitOK {
			t.Fatalf("exit %d:\n%s", out.code, out.stderr)
		}
		exists(t, filepath.Join(home, "sub", "w.txt"))
		exists(t, filepath.Join(home, "x.db"))
		absent(t, filepath.Join(e.ws, "~"))
	})
	t.Run("--database with a variable and a relative path", func(t *testing.T) {
		e := newCLIEnv(t)
		dir := t.TempDir()
		e.env["DBDIR"] = dir
		t.Chdir(e.ws)
		e.srv.Script(fakellm.Text("one"), fakellm.Text("two"))
		if out := e.run("", append(append([]string{"run", "--workspace", e.ws, "--database", "$DBDIR/v.db"}, route(e)...), "hi")...); out.code != exitOK {
			t.Fatalf("exit %d:\n%s", out.code, out.stderr)
		}
		exists(t, filepath.Join(dir, "v.db"))
		absent(t, filepath.Join(e.ws, "$DBDIR"))
		if out := e.run("", append(append([]string{"run", "--workspace", e.ws, "--database", "rel.db"}, route(e)...), "hi")...); out.code != exitOK {
			t.Fatalf("exit %d:\n%s", out.code, out.stderr)
		}
		exists(t, filepath.Join(e.ws, "rel.db"))
	})
	t.Run("unset variable in --database", func(t *testing.T) {
		e := newCLIEnv(t)
		out := e.run("", "sessions", "list", "--database", "$NOPE_DIR/x.db")
		if out.code != exitUsage || !strings.Contains(out.stderr, "--database uses $NOPE_DIR, which is not set") {
			t.Errorf("exit %d:\n%s", out.code, out.stderr)
		}
	})
	t.Run("TALARIA_DATABASE_URL=sqlite://~/y.db and TALARIA_DB relative", func(t *testing.T) {
		e := newCLIEnv(t)
		home := t.TempDir()
		e.env["HOME"] = home
		e.env["TALARIA_DATABASE_URL"] = "sqlite://~/y.db"
		t.Chdir(e.ws)
		e.srv.Script(fakellm.Text("one"), fakellm.Text("two"))
		if out := e.run("", append(append([]string{"run", "--workspace", e.ws}, route(e)...), "hi")...); out.code != exitOK {
			t.Fatalf("exit %d:\n%s", out.code, out.stderr)
		}
		exists(t, filepath.Join(home, "y.db"))
		absent(t, filepath.Join(e.ws, "~"))
		delete(e.env, "TALARIA_DATABASE_URL")
		e.env["TALARIA_DB"] = "z.db"
		if out := e.run("", append(append([]string{"run", "--workspace", e.ws}, route(e)...), "hi")...); out.code != exitOK {
			t.Fatalf("exit %d:\n%s", out.code, out.stderr)
		}
		exists(t, filepath.Join(e.ws, "z.db"))
	})
	t.Run("memory --workspace ~/sub is the same workspace as run's", func(t *testing.T) {
		e := newCLIEnv(t)
		home := t.TempDir()
		e.env["HOME"] = home
		sub := filepath.Join(home, "sub")
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if out := e.run("", "memory", "add", "uses tabs", "--workspace", "~/sub"); out.code != exitOK {
			t.Fatalf("exit %d:\n%s", out.code, out.stderr)
		}
		out := e.run("", "memory", "list", "--workspace", sub)
		if out.code != exitOK || !strings.Contains(out.stdout, "uses tabs") {
			t.Errorf("exit %d: the entry added under ~/sub is not in %s:\n%s%s", out.code, sub, out.stdout, out.stderr)
		}
	})
}
