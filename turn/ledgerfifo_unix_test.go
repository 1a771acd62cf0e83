//go:build unix

package turn_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// A path the ledger hashes may be anything the model made there: a FIFO
// with no writer must not block (open(2) would wait for one forever,
// holding the turn before its tool call starts), and only a regular
// file has a hash.
func TestFileHashKinds(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"fifo", fifo, ""},
		{"directory", dir, ""},
		{"absent", filepath.Join(dir, "none"), store.HashAbsent},
		{"file", file, turn.HashBytes([]byte("abc"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := turn.FileHash(tc.path); got != tc.want {
				t.Fatalf("FileHash(%s) = %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}
