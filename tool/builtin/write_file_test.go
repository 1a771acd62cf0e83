package builtin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFile(t *testing.T) {
	root, _ := testWS(t)
	writeFiles(t, root, map[string]string{"old.txt": "old content\n", "dir/x": "x"})
	if err := os.Chmod(filepath.Join(root, "old.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	symlink(t, "old.txt", filepath.Join(root, "link_in"))
	wf := WriteFile(Options{Root: root})

	tests := []struct {
		name, path string
		content    any // nil: omitted
		wantMsg    string
		isErr      bool
		check      string // file (relative) whose content must equal content
	}{
		{name: "create nested", path: "a/b/c.txt", content: "one\ntwo\n", wantMsg: "created a/b/c.txt: 8 bytes, 2 lines", check: "a/b/c.txt"},
		{name: "create empty", path: "empty.txt", content: "", wantMsg: "created empty.txt: 0 bytes, 0 lines", check: "empty.txt"},
		{name: "overwrite", path: "old.txt", content: "new", wantMsg: "overwrote (was 12 bytes) old.txt: 3 bytes, 1 lines", check: "old.txt"},
		{name: "through inside symlink", path: "link_in", content: "via link\n", wantMsg: "overwrote", check: "old.txt"},
		{name: "directory", path: "dir", content: "x", wantMsg: "dir is a directory", isErr: true},
		{name: "under a file", path: "dir/x/y.txt", content: "x", wantMsg: "cannot write dir/x/y.txt", isErr: true},
		{name: "content missing", path: "m.txt", content: nil, wantMsg: `missing required property "content"`, isErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"path": tt.path}
			if tt.content != nil {
				args["content"] = tt.content
			}
			res := call(t, wf, args)
			if res.IsError != tt.isErr {
				t.Fatalf("IsError = %v, want %v: %s", res.IsError, tt.isErr, res.Content)
			}
			if !strings.Contains(res.Content, tt.wantMsg) {
				t.Errorf("content %q lacks %q", res.Content, tt.wantMsg)
			}
			if tt.check != "" {
				if got := readFileT(t, filepath.Join(root, tt.check)); got != tt.content {
					t.Errorf("%s holds %q, want %q", tt.check, got, tt.content)
				}
			}
		})
	}

	if fi, err := os.Lstat(filepath.Join(root, "link_in")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("writing through a symlink replaced the link (err %v)", err)
	}
	if fi, err := os.Stat(filepath.Join(root, "old.txt")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("overwrite changed the file mode: %v, %v", fi.Mode(), err)
	}
	// Atomic writes go through temporary files; none may be left behind.
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
