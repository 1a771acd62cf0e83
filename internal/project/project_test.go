package project

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree makes files (path → content; a path ending in / is a directory)
// under a fresh directory.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestRoot(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		from  string
		want  string
	}{
		{"git dir", map[string]string{"repo/.git/": "", "repo/a/b/": ""}, "repo/a/b", "repo"},
		{"nested git: the nearest", map[string]string{"outer/.git/": "", "outer/inner/.git/": "", "outer/inner/x/": ""}, "outer/inner/x", "outer/inner"},
		{"worktree .git file", map[string]string{"wt/.git": "gitdir: /elsewhere/.git/worktrees/wt\n", "wt/pkg/": ""}, "wt/pkg", "wt"},
		{"git beats a nearer go.mod", map[string]string{"repo/.git/": "", "repo/mod/go.mod": "module m\n", "repo/mod/sub/": ""}, "repo/mod/sub", "repo"},
		{"go.mod only", map[string]string{"m/go.mod": "module m\n", "m/internal/x/": ""}, "m/internal/x", "m"},
		{"AGENTS.md only", map[string]string{"p/AGENTS.md": "be brief\n", "p/docs/": ""}, "p/docs", "p"},
		{"none: the directory itself", map[string]string{"plain/deep/": ""}, "plain/deep", "plain/deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := tree(t, tc.files)
			got := Root(filepath.Join(base, tc.from))
			// A marker above the temp dir (none expected on a test
			// machine) would show as a root outside base.
			if want := filepath.Join(base, tc.want); got != want {
				t.Errorf("Root(%s) = %s, want %s", tc.from, got, want)
			}
		})
	}
}

func TestInstructions(t *testing.T) {
	base := tree(t, map[string]string{
		".git/":               "",
		"AGENTS.md":           "root rule: use tabs\n",
		"svc/AGENTS.md":       "svc rule: use spaces\n",
		"svc/api/handlers/":   "",
		"other/AGENTS.md":     "not on the path\n",
		"outside-secret.txt":  "",
		"svc/api/AGENTS.md/":  "", // a directory named AGENTS.md is skipped
		"svc/api/handlers/.x": "",
	})
	got := Instructions(base, filepath.Join(base, "svc/api/handlers"), MaxInstructions)
	want := "--- AGENTS.md ---\nroot rule: use tabs\n--- svc/AGENTS.md ---\nsvc rule: use spaces\n"
	if got != want {
		t.Errorf("Instructions = %q, want %q", got, want)
	}
	if Prompt(base, base) == "" || !strings.Contains(Prompt(base, base), "root rule") {
		t.Errorf("Prompt lacks the root's file")
	}
	// A directory outside the root gives only the root's file.
	if got := Instructions(base, t.TempDir(), MaxInstructions); got != "--- AGENTS.md ---\nroot rule: use tabs\n" {
		t.Errorf("outside dir: %q", got)
	}
	if got := Instructions(t.TempDir(), t.TempDir(), MaxInstructions); got != "" {
		t.Errorf("no files: %q", got)
	}
}

func TestInstructionsCap(t *testing.T) {
	big := strings.Repeat("é", 100) // two bytes a rune: the cut must not split one
	base := tree(t, map[string]string{"AGENTS.md": big, "sub/AGENTS.md": "nearest rule\n"})
	got := Instructions(base, filepath.Join(base, "sub"), 101)
	if !strings.Contains(got, "AGENTS.md text cut here") {
		t.Fatalf("no truncation marker: %q", got)
	}
	head, _, _ := strings.Cut(got, "\n[…")
	if len(head) > 101 || !strings.HasPrefix(head, "--- AGENTS.md ---\né") {
		t.Errorf("cut text = %q (%d bytes)", head, len(head))
	}
	if !strings.HasSuffix(head, "é") {
		t.Errorf("a rune was split: %q", head[len(head)-4:])
	}
}

// A symlinked AGENTS.md pointing out of the project is not read: its
// target would go to the model provider.
func TestInstructionsSymlinkOut(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "id_rsa")
	if err := os.WriteFile(secret, []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := tree(t, map[string]string{"docs/rules.md": "inside rule\n", "sub/": ""})
	if err := os.Symlink(secret, filepath.Join(base, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "docs/rules.md"), filepath.Join(base, "sub/AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	got := Instructions(base, filepath.Join(base, "sub"), MaxInstructions)
	if strings.Contains(got, "PRIVATE KEY") {
		t.Errorf("a symlink out of the project was read: %q", got)
	}
	if !strings.Contains(got, "inside rule") {
		t.Errorf("a symlink inside the project was not read: %q", got)
	}
}
