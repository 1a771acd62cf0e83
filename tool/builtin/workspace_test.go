package builtin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	root, outside := testWS(t)
	writeFiles(t, root, map[string]string{"in.txt": "x", "sub/deep.txt": "y"})
	writeFiles(t, outside, map[string]string{"secret.txt": "s"})
	symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(root, "link_out_file"))
	symlink(t, outside, filepath.Join(root, "link_out_dir"))
	symlink(t, "../outside", filepath.Join(root, "rel_link_out_dir"))
	symlink(t, filepath.Join(outside, "new.txt"), filepath.Join(root, "dangling_out"))
	symlink(t, "in.txt", filepath.Join(root, "link_in"))
	symlink(t, filepath.Join(root, "sub"), filepath.Join(root, "abs_link_in_dir"))
	symlink(t, "missing.txt", filepath.Join(root, "dangling_in"))
	symlink(t, "loop", filepath.Join(root, "loop"))
	ws := workspace{root: root}

	tests := []struct {
		name, path string
		wantRel    string // "" when an error is expected
		wantErr    string
	}{
		{"relative file", "in.txt", "in.txt", ""},
		{"nested", "sub/deep.txt", "sub/deep.txt", ""},
		{"root itself", ".", ".", ""},
		{"dot dot inside", "sub/../in.txt", "in.txt", ""},
		{"absolute inside", filepath.Join(root, "sub/deep.txt"), "sub/deep.txt", ""},
		{"new file", "new/dir/file.txt", "new/dir/file.txt", ""},
		{"symlink inside to inside", "link_in", "in.txt", ""},
		{"absolute symlinked dir inside", "abs_link_in_dir/deep.txt", "sub/deep.txt", ""},
		{"dangling symlink inside", "dangling_in", "missing.txt", ""},
		{"dot dot escape", "../outside/secret.txt", "", "path escapes the workspace: ../outside/secret.txt"},
		{"deep dot dot escape", "sub/../../x", "", "path escapes the workspace: sub/../../x"},
		{"absolute outside", filepath.Join(outside, "secret.txt"), "", "path is outside the workspace"},
		{"absolute root file", "/etc/passwd", "", "path is outside the workspace: /etc/passwd"},
		{"symlink file escape", "link_out_file", "", "path escapes the workspace through a symlink"},
		{"symlink dir escape", "link_out_dir/secret.txt", "", "path escapes the workspace through a symlink"},
		{"relative symlink dir escape", "rel_link_out_dir/secret.txt", "", "through a symlink"},
		{"new file under symlinked dir", "link_out_dir/new/file.txt", "", "through a symlink"},
		{"dangling symlink escape", "dangling_out", "", "through a symlink"},
		{"symlink loop", "loop", "", "cannot resolve path loop"},
		{"empty", "  ", "", "path is empty"},
		{"nul byte", "a\x00b", "", "NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ws.resolve(tt.path)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("resolve(%q) = %+v, want error containing %q", tt.path, got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("resolve(%q) error %q, want it to contain %q", tt.path, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("resolve(%q): %v", tt.path, err)
			}
			if got.show() != tt.wantRel {
				t.Errorf("resolve(%q).rel = %q, want %q", tt.path, got.show(), tt.wantRel)
			}
		})
	}
}

// TestResolveSymlinkedRoot covers a root reached through a symlink (as
// /tmp is on macOS): absolute paths through either spelling are inside.
func TestResolveSymlinkedRoot(t *testing.T) {
	real, _ := testWS(t)
	writeFiles(t, real, map[string]string{"a.txt": "a"})
	alias := filepath.Join(t.TempDir(), "alias")
	symlink(t, real, alias)
	ws := workspace{root: alias}
	for _, p := range []string{"a.txt", filepath.Join(alias, "a.txt"), filepath.Join(real, "a.txt")} {
		got, err := ws.resolve(p)
		if err != nil || got.show() != "a.txt" {
			t.Errorf("resolve(%q) = %q, %v; want a.txt", p, got.show(), err)
		}
	}
}

// TestFileToolsRefuseEscapes drives every file tool with every kind of
// escape and checks that nothing outside the workspace is read or written.
func TestFileToolsRefuseEscapes(t *testing.T) {
	root, outside := testWS(t)
	writeFiles(t, outside, map[string]string{"secret.txt": "secret password\n"})
	symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(root, "link_out_file"))
	symlink(t, outside, filepath.Join(root, "link_out_dir"))
	symlink(t, filepath.Join(outside, "created.txt"), filepath.Join(root, "dangling_out"))
	opt := Options{Root: root}

	escapes := map[string]string{
		"dot dot":                      "../outside/secret.txt",
		"absolute":                     filepath.Join(outside, "secret.txt"),
		"symlink file":                 "link_out_file",
		"symlink dir":                  "link_out_dir/secret.txt",
		"new file under symlinked dir": "link_out_dir/created.txt",
		"dangling symlink":             "dangling_out",
	}
	type toolCase struct {
		name string
		args func(p string) map[string]any
	}
	tools := map[string]toolCase{
		"read_file":  {"read_file", func(p string) map[string]any { return map[string]any{"path": p} }},
		"write_file": {"write_file", func(p string) map[string]any { return map[string]any{"path": p, "content": "pwned"} }},
		"edit_file": {"edit_file", func(p string) map[string]any {
			return map[string]any{"path": p, "old_string": "secret", "new_string": "pwned"}
		}},
		"list_dir":     {"list_dir", func(p string) map[string]any { return map[string]any{"path": p} }},
		"search_files": {"search_files", func(p string) map[string]any { return map[string]any{"pattern": "secret", "path": p} }},
	}
	all, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]int{}
	for i, tl := range all {
		byName[tl.Info().Name] = i
	}
	for tname, tc := range tools {
		for ename, p := range escapes {
			t.Run(tname+"/"+ename, func(t *testing.T) {
				res := call(t, all[byName[tc.name]], tc.args(p))
				if !res.IsError {
					t.Fatalf("escape %q was allowed: %s", p, res.Content)
				}
				if !strings.Contains(res.Content, "workspace") {
					t.Errorf("message %q does not explain the workspace confinement", res.Content)
				}
				if strings.Contains(res.Content, "password") {
					t.Errorf("outside content leaked: %s", res.Content)
				}
			})
		}
	}
	if got := readFileT(t, filepath.Join(outside, "secret.txt")); got != "secret password\n" {
		t.Errorf("outside file changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(outside, "created.txt")); !os.IsNotExist(err) {
		t.Errorf("a file was created outside the workspace (stat err %v)", err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "dangling_out")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("dangling symlink was replaced: %v", err)
	}
}
