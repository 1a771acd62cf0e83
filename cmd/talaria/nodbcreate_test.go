package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Commands that read (or change what is already there) never create a
// database: a typo'd path is an error that names it, and neither the file
// nor its folder appears. A fresh install's `sessions list` says there is
// nothing yet and exits 0, still creating nothing.
func TestReadersNeverCreateADatabase(t *testing.T) {
	cmds := [][]string{
		{"sessions", "list"},
		{"sessions", "show", "20260101-000000-000000000000"},
		{"sessions", "search", "penguin"},
		{"sessions", "delete", "20260101-000000-000000000000"},
		{"trace", "20260101-000000-000000000000"},
		{"keys", "status"},
		{"memory", "list"},
		{"memory", "clear"},
		{"doctor"},
	}
	for _, args := range cmds {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			e := newCLIEnv(t)
			dir := filepath.Join(t.TempDir(), "typo")
			db := filepath.Join(dir, "x.db")
			out := e.run("", append(args, "--database", db)...)
			if out.code == exitOK {
				t.Errorf("exit 0 for a database that does not exist\n%s%s", out.stdout, out.stderr)
			}
			if !strings.Contains(out.stdout+out.stderr, "no database at "+db) {
				t.Errorf("the error does not name the missing database:\n%s%s", out.stdout, out.stderr)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("%s was created (%v)", dir, err)
			}
		})
	}
	t.Run("db migrate --from", func(t *testing.T) {
		e := newCLIEnv(t)
		src := filepath.Join(t.TempDir(), "nonexistent.db")
		out := e.run("", "db", "migrate", "--from", "sqlite://"+src, "--to", "postgres://nobody@127.0.0.1:1/none")
		if out.code == exitOK || !strings.Contains(out.stderr, "no database at "+src) {
			t.Errorf("exit %d\n%s", out.code, out.stderr)
		}
		if _, err := os.Stat(src); !os.IsNotExist(err) {
			t.Errorf("%s was created (%v)", src, err)
		}
	})
	t.Run("fresh install sessions list", func(t *testing.T) {
		e := newCLIEnv(t)
		out := e.run("", "sessions", "list")
		if out.code != exitOK || !strings.Contains(out.stdout, "no sessions yet") || !strings.Contains(out.stdout, "first `talaria run` creates it") {
			t.Errorf("exit %d\n%s%s", out.code, out.stdout, out.stderr)
		}
		if json := e.run("", "sessions", "list", "--json"); json.code != exitOK || strings.TrimSpace(json.stdout) != "[]" {
			t.Errorf("--json: exit %d %q", json.code, json.stdout)
		}
		if _, err := os.Stat(filepath.Join(e.home, "state.db")); !os.IsNotExist(err) {
			t.Errorf("state.db was created (%v)", err)
		}
		doc := e.run("", "doctor")
		if !strings.Contains(doc.stdout+doc.stderr, "no database at") {
			t.Errorf("doctor does not say there is no database yet:\n%s%s", doc.stdout, doc.stderr)
		}
		if _, err := os.Stat(filepath.Join(e.home, "state.db")); !os.IsNotExist(err) {
			t.Errorf("doctor created state.db (%v)", err)
		}
	})
}
