package builtin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSearchFiles(t *testing.T) {
	root, outside := testWS(t)
	writeFiles(t, root, map[string]string{
		"a.go":             "package a\n\nfunc Alpha() {}\n",
		"b.md":             "# Alpha doc\r\nnothing\r\n",
		"sub/c.go":         "package sub\nfunc alpha() {}\n",
		"sub/deep/d.txt":   "Alpha deep\n",
		".git/config":      "Alpha in git\n",
		"bin.dat":          "Alpha\x00\x01\x02",
		"web/x.ts":         "Alpha ts\n",
		"web/y.tsx":        "Alpha tsx\n",
		"big/huge.txt":     "Alpha\n" + strings.Repeat("z", maxSearchFileBytes),
		"long/minified.js": "Alpha" + strings.Repeat("q", 1000) + "\n",
	})
	writeFiles(t, outside, map[string]string{"o.txt": "Alpha outside\n"})
	symlink(t, outside, filepath.Join(root, "outlink"))
	symlink(t, filepath.Join(outside, "o.txt"), filepath.Join(root, "olink.txt"))
	sf := SearchFiles(Options{Root: root})

	tests := []struct {
		name    string
		args    map[string]any
		want    string
		contain []string
		isErr   bool
	}{
		{name: "everything", args: map[string]any{"pattern": "Alpha"},
			want: "a.go:3: func Alpha() {}\nb.md:1: # Alpha doc\n" +
				"long/minified.js:1: Alpha" + strings.Repeat("q", maxMatchLineBytes-5) + "… [line truncated, 1005 bytes in all]\n" +
				"sub/deep/d.txt:1: Alpha deep\nweb/x.ts:1: Alpha ts\nweb/y.tsx:1: Alpha tsx\n" +
				"[1 files over 2 MiB skipped; 1 binary files skipped]\n"},
		{name: "case insensitive in a dir", args: map[string]any{"pattern": "(?i)^func alpha", "path": "sub"},
			want: "sub/c.go:2: func alpha() {}\n"},
		{name: "base-name glob", args: map[string]any{"pattern": "Alpha|alpha", "glob": "*.go"},
			want: "a.go:3: func Alpha() {}\nsub/c.go:2: func alpha() {}\n"},
		{name: "path glob with braces", args: map[string]any{"pattern": "Alpha", "glob": "web/**/*.{ts,tsx}"},
			want: "web/x.ts:1: Alpha ts\nweb/y.tsx:1: Alpha tsx\n"},
		{name: "glob relative to path", args: map[string]any{"pattern": "Alpha", "path": "sub", "glob": "deep/*.txt"},
			want: "sub/deep/d.txt:1: Alpha deep\n"},
		{name: "single file", args: map[string]any{"pattern": "package", "path": "a.go"},
			want: "a.go:1: package a\n"},
		{name: "no matches", args: map[string]any{"pattern": "Omega", "glob": "*.go"},
			want: "no matches for \"Omega\" in . (2 files searched)\n"},
		{name: "bad regexp", args: map[string]any{"pattern": "func("}, isErr: true,
			contain: []string{"invalid pattern (Go RE2 syntax)", "missing closing )"}},
		{name: "bad glob", args: map[string]any{"pattern": "x", "glob": "[a"}, isErr: true, contain: []string{"invalid glob"}},
		{name: "empty pattern", args: map[string]any{"pattern": ""}, isErr: true, contain: []string{"/pattern: must be at least 1 character long"}},
		{name: "missing path", args: map[string]any{"pattern": "x", "path": "nope"}, isErr: true,
			contain: []string{"cannot search nope"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, sf, tt.args)
			if res.IsError != tt.isErr {
				t.Fatalf("IsError = %v, want %v:\n%s", res.IsError, tt.isErr, res.Content)
			}
			if tt.want != "" && res.Content != tt.want {
				t.Errorf("got\n%s\nwant\n%s", res.Content, tt.want)
			}
			for _, c := range tt.contain {
				if !strings.Contains(res.Content, c) {
					t.Errorf("content lacks %q:\n%s", c, res.Content)
				}
			}
			if strings.Contains(res.Content, "outside") || strings.Contains(res.Content, "in git") {
				t.Errorf("searched where it must not:\n%s", res.Content)
			}
		})
	}
}

func TestSearchFilesBounded(t *testing.T) {
	root, _ := testWS(t)
	var b strings.Builder
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "hit %d\n", i)
	}
	writeFiles(t, root, map[string]string{"f.txt": b.String()})
	tests := []struct {
		name      string
		opt       Options
		max       int
		wantShown int
	}{
		{"max_results", Options{Root: root}, 5, 5},
		{"default", Options{Root: root}, 0, 12},
		{"output budget", Options{Root: root, MaxOutput: minMaxOutput}, 1000, 0}, // 0: just check the note
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"pattern": "hit"}
			if tt.max > 0 {
				args["max_results"] = tt.max
			}
			res := call(t, SearchFiles(tt.opt), args)
			if res.IsError {
				t.Fatal(res.Content)
			}
			shown := strings.Count(res.Content, "f.txt:")
			if tt.wantShown > 0 && shown != tt.wantShown {
				t.Errorf("%d matches shown, want %d:\n%s", shown, tt.wantShown, res.Content)
			}
			if hidden := 12 - shown; hidden > 0 {
				note := fmt.Sprintf("[%d more matches not shown;", hidden)
				if !strings.Contains(res.Content, note) {
					t.Errorf("content lacks %q:\n%s", note, res.Content)
				}
			}
		})
	}
}

func TestSearchFilesSkipsUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads everything; permission errors cannot be provoked")
	}
	root, _ := testWS(t)
	writeFiles(t, root, map[string]string{"ok.txt": "needle\n", "locked/secret.txt": "needle\n"})
	locked := filepath.Join(root, "locked")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(locked, 0o755) })
	res := call(t, SearchFiles(Options{Root: root}), map[string]any{"pattern": "needle"})
	if res.IsError || res.Content != "ok.txt:1: needle\n" {
		t.Errorf("got %+v", res)
	}
}
