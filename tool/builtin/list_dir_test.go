package builtin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestListDir(t *testing.T) {
	root, outside := testWS(t)
	writeFiles(t, root, map[string]string{
		"go.mod":             "module x\n",
		"cmd/main.go":        strings.Repeat("x", 2048),
		"cmd/sub/deep.go":    "d",
		".git/HEAD":          "ref",
		".gitignore":         "bin/\n",
		"empty/.keep":        "",
		"docs/readme.md":     "r",
		"docs/img/logo.txt":  "l",
		"docs/img/more/x.md": "m",
	})
	if err := os.Mkdir(filepath.Join(root, "void"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, outside, filepath.Join(root, "out"))
	ld := ListDir(Options{Root: root})

	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"default depth 2", map[string]any{},
			".gitignore  5 B\ncmd/\ncmd/main.go  2.0 KiB\ncmd/sub/\ndocs/\ndocs/img/\ndocs/readme.md  1 B\n" +
				"empty/\nempty/.keep  0 B\ngo.mod  9 B\nout -> " + outside + "\nvoid/\n"},
		{"depth 1", map[string]any{"depth": 1},
			".gitignore  5 B\ncmd/\ndocs/\nempty/\ngo.mod  9 B\nout -> " + outside + "\nvoid/\n"},
		{"subdirectory deep", map[string]any{"path": "docs", "depth": 5},
			"docs/img/\ndocs/img/logo.txt  1 B\ndocs/img/more/\ndocs/img/more/x.md  1 B\ndocs/readme.md  1 B\n"},
		{"a file", map[string]any{"path": "go.mod"}, "go.mod  9 B\n"},
		{"empty dir", map[string]any{"path": "void"}, "void is empty\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, ld, tt.args)
			if res.IsError {
				t.Fatal(res.Content)
			}
			if res.Content != tt.want {
				t.Errorf("listing\n%s\nwant\n%s", res.Content, tt.want)
			}
		})
	}

	res := call(t, ld, map[string]any{"path": "missing"})
	if !res.IsError || !strings.Contains(res.Content, "cannot list missing: no such file or directory") {
		t.Errorf("missing dir: %+v", res)
	}
}

func TestListDirBounded(t *testing.T) {
	root, _ := testWS(t)
	files := map[string]string{}
	for i := range 600 {
		files[fmt.Sprintf("d/f%03d", i)] = ""
	}
	files["a.txt"] = ""
	writeFiles(t, root, files)
	res := call(t, ListDir(Options{Root: root, MaxOutput: 1 << 20}), map[string]any{})
	if res.IsError {
		t.Fatal(res.Content)
	}
	lines := strings.Split(strings.TrimSuffix(res.Content, "\n"), "\n")
	if len(lines) != maxListEntries+1 {
		t.Errorf("%d lines, want %d entries and a note", len(lines), maxListEntries)
	}
	// Breadth first: the shallow entries are among those shown.
	if lines[0] != "a.txt  0 B" || lines[1] != "d/" {
		t.Errorf("shallow entries missing: %q, %q", lines[0], lines[1])
	}
	if last := lines[len(lines)-1]; last != "[102 more entries not shown; list a subdirectory or use a smaller depth]" {
		t.Errorf("note = %q", last)
	}
}
