package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Each kind is worded by its real cause, names the database and the
// underlying error, says what to do, and fits on one line.
func TestDescribe(t *testing.T) {
	cause := errors.New("database is locked\n(5)")
	tests := []struct {
		kind    ErrorKind
		path    string
		want    []string
		notWant []string
	}{
		{KindLocked, "/data/state.db", []string{"the database /data/state.db is locked by another process", "(database is locked (5))", "wait for it"}, []string{"disk", "damaged"}},
		{KindCorrupt, "/data/my state.db", []string{"the database /data/my state.db is damaged", "mv '/data/my state.db' '/data/my state.db.damaged'", "sessions stay"}, []string{"disk"}},
		{KindReadOnly, "/data/state.db", []string{"is read-only", "permissions of the file and of /data", "TALARIA_HOME"}, []string{"disk"}},
		{KindDiskFull, "/data/state.db", []string{"the disk holding the database /data/state.db is full", "free some space"}, nil},
		{KindUnavailable, "db.example:5432", []string{"the database server db.example:5432 cannot be reached", "check that it is running"}, []string{"disk"}},
		{KindLocked, "", []string{"the database is locked by another process"}, []string{"the database  "}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %q", tt.kind, tt.path), func(t *testing.T) {
			err := fmt.Errorf("saving: %w", &Error{Op: "append", Kind: tt.kind, Path: tt.path, Err: cause})
			got := Describe(err)
			if strings.Contains(got, "\n") {
				t.Errorf("Describe spans lines: %q", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("Describe = %q, lacks %q", got, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("Describe = %q, says %q", got, w)
				}
			}
		})
	}
	if got := Describe(fmt.Errorf("append: %w", ErrLeaseLost)); got != "another process took over this session's turn" {
		t.Errorf("a bare ErrLeaseLost: %q", got)
	}
	if got := Describe(errors.New("plain\nfailure")); got != "plain failure" {
		t.Errorf("a non-store error: %q", got)
	}
	// The short hint inside Error() is the same wording, without the file.
	e := &Error{Op: "open", Kind: KindLocked, Path: "/x.db", Err: cause}
	if !strings.Contains(e.Error(), "the database is locked by another process") {
		t.Errorf("Error() = %q", e.Error())
	}
}

// Describe keeps the caller's context where the kind has no words of its
// own: "session x: not found" must not become "not found".
func TestDescribeKeepsContext(t *testing.T) {
	if got := Describe(fmt.Errorf("session 2026-x: %w", ErrNotFound)); got != "session 2026-x: not found" {
		t.Errorf("got %q", got)
	}
	e := &Error{Op: "get", Kind: KindNotFound, Err: errors.New("no row")}
	if got := Describe(e); !strings.Contains(got, "store get") || !strings.Contains(got, "no row") {
		t.Errorf("got %q", got)
	}
}
