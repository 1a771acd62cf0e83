package builtin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/tool"
)

func TestReadFile(t *testing.T) {
	root, _ := testWS(t)
	var many strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&many, "line %d\n", i)
	}
	writeFiles(t, root, map[string]string{
		"abc.txt":    "a\nb\nc\n",
		"nonl.txt":   "x\ny",
		"crlf.txt":   "one\r\ntwo\r\n",
		"empty.txt":  "",
		"many.txt":   many.String(),
		"long.txt":   strings.Repeat("é", 3000) + "\nshort\n",
		"latin1.txt": "caf\xe9\n",
		"bin.dat":    "\x7fELF\x02\x01\x01\x00\x00\x00rest",
		"dir/f.txt":  "f\n",
	})
	rf := ReadFile(Options{Root: root, MaxOutput: 1 << 20}) // large enough that the line cap applies first

	tests := []struct {
		name    string
		args    map[string]any
		want    string // exact content, when set
		contain []string
		isErr   bool
	}{
		{name: "whole file", args: map[string]any{"path": "abc.txt"},
			want: "     1\ta\n     2\tb\n     3\tc\n"},
		{name: "no trailing newline", args: map[string]any{"path": "nonl.txt"},
			want: "     1\tx\n     2\ty\n"},
		{name: "crlf", args: map[string]any{"path": "crlf.txt"},
			want: "     1\tone\n     2\ttwo\n"},
		{name: "range", args: map[string]any{"path": "abc.txt", "start_line": 2, "end_line": 2},
			want: "     2\tb\n[lines 2-2 of 3]\n"},
		{name: "end past eof", args: map[string]any{"path": "abc.txt", "start_line": 3, "end_line": 99},
			want: "     3\tc\n[lines 3-3 of 3]\n"},
		{name: "absolute inside", args: map[string]any{"path": filepath.Join(root, "dir/f.txt")},
			want: "     1\tf\n"},
		{name: "empty", args: map[string]any{"path": "empty.txt"}, want: "(empty.txt is empty)"},
		{name: "large file truncated", args: map[string]any{"path": "many.txt"},
			contain: []string{"     1\tline 1\n", "  2000\tline 2000\n",
				"[showing lines 1-2000 of 5000; call read_file with start_line=2001 to read more]"}},
		{name: "continue", args: map[string]any{"path": "many.txt", "start_line": 4999},
			want: "  4999\tline 4999\n  5000\tline 5000\n[lines 4999-5000 of 5000]\n"},
		{name: "long line clipped", args: map[string]any{"path": "long.txt"},
			contain: []string{"… [line truncated, 6000 bytes in all]", "     2\tshort\n"}},
		{name: "latin1 still text", args: map[string]any{"path": "latin1.txt"}, contain: []string{"     1\tcaf\uFFFD"}},
		{name: "binary refused", args: map[string]any{"path": "bin.dat"}, isErr: true,
			contain: []string{"bin.dat is a binary file", "shell"}},
		{name: "directory", args: map[string]any{"path": "dir"}, isErr: true, contain: []string{"is a directory; use list_dir"}},
		{name: "missing", args: map[string]any{"path": "nope.txt"}, isErr: true,
			contain: []string{"cannot read nope.txt: no such file or directory"}},
		{name: "start past eof", args: map[string]any{"path": "abc.txt", "start_line": 9}, isErr: true,
			contain: []string{"start_line 9 is past the end of abc.txt, which has 3 lines"}},
		{name: "end before start", args: map[string]any{"path": "abc.txt", "start_line": 3, "end_line": 2}, isErr: true,
			contain: []string{"end_line (2) is before start_line (3)"}},
		{name: "no path", args: map[string]any{}, isErr: true, contain: []string{`missing required property "path"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, rf, tt.args)
			if res.IsError != tt.isErr {
				t.Fatalf("IsError = %v, want %v; content:\n%s", res.IsError, tt.isErr, res.Content)
			}
			if tt.want != "" && res.Content != tt.want {
				t.Errorf("content\n%q\nwant\n%q", res.Content, tt.want)
			}
			for _, c := range tt.contain {
				if !strings.Contains(res.Content, c) {
					t.Errorf("content lacks %q:\n%s", c, clip(res.Content))
				}
			}
		})
	}
}

func TestReadFileOutputBudget(t *testing.T) {
	root, _ := testWS(t)
	var b strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&b, "%03d %s\n", i, strings.Repeat("x", 40))
	}
	writeFiles(t, root, map[string]string{"f.txt": b.String()})
	res := call(t, ReadFile(Options{Root: root, MaxOutput: 1000}), map[string]any{"path": "f.txt"})
	if res.IsError {
		t.Fatal(res.Content)
	}
	if len(res.Content) > 1000 {
		t.Errorf("content is %d bytes, over MaxOutput 1000", len(res.Content))
	}
	if strings.Contains(res.Content, "omitted") {
		t.Errorf("read_file output was cut in the middle instead of paged:\n%s", res.Content)
	}
	// Whole lines only, then a note saying where to continue.
	lines := strings.Split(strings.TrimSuffix(res.Content, "\n"), "\n")
	note := lines[len(lines)-1]
	shown := len(lines) - 1
	want := fmt.Sprintf("[showing lines 1-%d of 100; call read_file with start_line=%d to read more]", shown, shown+1)
	if note != want {
		t.Errorf("note = %q, want %q", note, want)
	}
}

func TestReadFileRefusesFIFO(t *testing.T) {
	root, _ := testWS(t)
	if err := mkfifo(filepath.Join(root, "pipe")); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	done := make(chan tool.Result, 1)
	go func() { done <- call(t, ReadFile(Options{Root: root}), map[string]any{"path": "pipe"}) }()
	select {
	case res := <-done:
		if !res.IsError || !strings.Contains(res.Content, "pipe is not a regular file") {
			t.Errorf("got %+v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("read_file blocked on a FIFO")
	}
}

func TestReadFileIsReadOnly(t *testing.T) {
	root, _ := testWS(t)
	writeFiles(t, root, map[string]string{"a": "a\n"})
	before, _ := os.Stat(filepath.Join(root, "a"))
	call(t, ReadFile(Options{Root: root}), map[string]any{"path": "a"})
	after, _ := os.Stat(filepath.Join(root, "a"))
	if !before.ModTime().Equal(after.ModTime()) {
		t.Error("read_file modified the file")
	}
}

// clip shortens test failure output.
func clip(s string) string {
	if len(s) > 2000 {
		return s[:1000] + "\n…\n" + s[len(s)-1000:]
	}
	return s
}
