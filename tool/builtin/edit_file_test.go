package builtin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEditFile(t *testing.T) {
	const src = "package main\n\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n"
	tests := []struct {
		name     string
		file     string // initial content of f.txt
		args     map[string]any
		isErr    bool
		contain  []string
		wantFile string // content after; defaults to file when isErr
	}{
		{name: "unique replace", file: src,
			args:     map[string]any{"old_string": "\"hi\"", "new_string": "\"hello\""},
			contain:  []string{"edited f.txt: replaced 1 occurrence now reads:", "     4\t\tfmt.Println(\"hello\")", "     1\tpackage main"},
			wantFile: strings.Replace(src, "hi", "hello", 1)},
		{name: "multi-line new text", file: src,
			args:     map[string]any{"old_string": "\tfmt.Println(\"hi\")\n", "new_string": "\ta()\n\tb()\n"},
			contain:  []string{"     4\t\ta()\n     5\t\tb()\n     6\t}\n"},
			wantFile: "package main\n\nfunc main() {\n\ta()\n\tb()\n}\n"},
		{name: "delete", file: "keep\ndrop\nkeep\n",
			args:     map[string]any{"old_string": "drop\n", "new_string": ""},
			wantFile: "keep\nkeep\n"},
		{name: "not found shows closest line", file: src,
			args: map[string]any{"old_string": "    fmt.Println(\"hi\")", "new_string": "x"}, isErr: true,
			contain: []string{"old_string was not found in f.txt", "including whitespace", "The closest line is:\n     4\t\tfmt.Println(\"hi\")"}},
		{name: "not found, nothing close", file: src,
			args: map[string]any{"old_string": "zzzz qqqq", "new_string": "x"}, isErr: true,
			contain: []string{"old_string was not found"}},
		{name: "ambiguous", file: "x = 1\ny = 2\nx = 1\nz\nx = 1\n",
			args: map[string]any{"old_string": "x = 1", "new_string": "x = 9"}, isErr: true,
			contain: []string{"old_string matches 3 times in f.txt (at lines 1, 3, 5)", "more surrounding lines", "replace_all"}},
		{name: "replace all", file: "x = 1\ny = 2\nx = 1\n",
			args:     map[string]any{"old_string": "x = 1", "new_string": "x = 9", "replace_all": true},
			contain:  []string{"replaced 2 occurrences"},
			wantFile: "x = 9\ny = 2\nx = 9\n"},
		{name: "crlf file with lf old_string", file: "a\r\nb\r\nc\r\n",
			args:     map[string]any{"old_string": "a\nb", "new_string": "A\nB"},
			wantFile: "A\r\nB\r\nc\r\n"},
		{name: "identical", file: src,
			args: map[string]any{"old_string": "main", "new_string": "main"}, isErr: true, contain: []string{"identical"}},
		{name: "empty old_string", file: src,
			args: map[string]any{"old_string": "", "new_string": "x"}, isErr: true, contain: []string{"/old_string: must be at least 1 character long"}},
		{name: "new_string missing", file: src,
			args: map[string]any{"old_string": "main"}, isErr: true, contain: []string{`missing required property "new_string"`}},
		{name: "binary", file: "ab\x00cd",
			args: map[string]any{"old_string": "ab", "new_string": "x"}, isErr: true, contain: []string{"binary"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, _ := testWS(t)
			writeFiles(t, root, map[string]string{"f.txt": tt.file})
			if err := os.Chmod(filepath.Join(root, "f.txt"), 0o640); err != nil {
				t.Fatal(err)
			}
			tt.args["path"] = "f.txt"
			res := call(t, EditFile(Options{Root: root}), tt.args)
			if res.IsError != tt.isErr {
				t.Fatalf("IsError = %v, want %v:\n%s", res.IsError, tt.isErr, res.Content)
			}
			for _, c := range tt.contain {
				if !strings.Contains(res.Content, c) {
					t.Errorf("content lacks %q:\n%s", c, res.Content)
				}
			}
			want := tt.wantFile
			if tt.isErr {
				want = tt.file
			}
			if want != "" {
				if got := readFileT(t, filepath.Join(root, "f.txt")); got != want {
					t.Errorf("file is\n%q\nwant\n%q", got, want)
				}
			}
			if fi, err := os.Stat(filepath.Join(root, "f.txt")); err != nil || fi.Mode().Perm() != 0o640 {
				t.Errorf("file mode changed: %v %v", fi.Mode(), err)
			}
		})
	}
}

func TestEditFileMissing(t *testing.T) {
	root, _ := testWS(t)
	res := call(t, EditFile(Options{Root: root}), map[string]any{"path": "nope.go", "old_string": "a", "new_string": "b"})
	if !res.IsError || !strings.Contains(res.Content, "cannot edit nope.go: no such file or directory") {
		t.Errorf("got %+v", res)
	}
}
