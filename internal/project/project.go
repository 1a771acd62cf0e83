// Package project finds the project a command runs in: its root (the
// workspace, and the key of its memory) and the AGENTS.md files that hold
// its instructions for agents.
package project

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/talaria-agent/talaria/internal/textcut"
)

// Root is the project root for dir (absolute): the nearest directory
// upward holding .git (a directory, or the file of a git worktree); else
// the nearest holding go.mod or AGENTS.md; else dir itself.
func Root(dir string) string {
	dir = filepath.Clean(dir)
	if r, ok := upward(dir, ".git"); ok {
		return r
	}
	if r, ok := upward(dir, "go.mod", "AGENTS.md"); ok {
		return r
	}
	return dir
}

// upward is the nearest directory from dir up holding one of names.
func upward(dir string, names ...string) (string, bool) {
	for d := dir; ; {
		for _, n := range names {
			if _, err := os.Lstat(filepath.Join(d, n)); err == nil {
				return d, true
			}
		}
		up := filepath.Dir(d)
		if up == d {
			return "", false
		}
		d = up
	}
}

// AgentsFile is the name of the instruction file (agents.md convention).
const AgentsFile = "AGENTS.md"

// MaxInstructions bounds the AGENTS.md text put into a prompt: every byte
// of it is paid for on every model call of the session.
const MaxInstructions = 32 << 10

// TruncationMarker ends instructions that were cut at the cap.
const TruncationMarker = "\n[… AGENTS.md text cut here: it exceeds %d bytes; read the file for the rest]\n"

// Instructions are the AGENTS.md files from root down to dir, in that
// order (the nearest to dir is last: it wins where they disagree), each
// under a header naming its path relative to root, the whole capped at
// max bytes with a marker. dir outside root gives only root's file.
//
// Only regular files inside root are read: a symlink pointing out of the
// project (say to ~/.ssh/id_rsa in a cloned repository) would send that
// file to the model provider.
func Instructions(root, dir string, max int) string {
	root, dir = filepath.Clean(root), filepath.Clean(dir)
	dirs := []string{root}
	if rel, err := filepath.Rel(root, dir); err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		d := root
		for _, part := range strings.Split(rel, string(filepath.Separator)) {
			d = filepath.Join(d, part)
			dirs = append(dirs, d)
		}
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, d := range dirs {
		text, ok := readInside(realRoot, filepath.Join(d, AgentsFile), max+1)
		if !ok || strings.TrimSpace(text) == "" {
			continue
		}
		rel, _ := filepath.Rel(root, filepath.Join(d, AgentsFile))
		fmt.Fprintf(&b, "--- %s ---\n%s\n", filepath.ToSlash(rel), strings.TrimRight(text, "\n"))
		if b.Len() > max {
			break
		}
	}
	s := b.String()
	if len(s) > max {
		s = textcut.Prefix(s, max) + fmt.Sprintf(TruncationMarker, max)
	}
	return s
}

// readInside reads up to n bytes of p if it is a regular file whose real
// path lies inside realRoot.
func readInside(realRoot, p string, n int) (string, bool) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", false
	}
	if rel, err := filepath.Rel(realRoot, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	f, err := os.Open(real)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(n)))
	if err != nil {
		return "", false
	}
	return string(b), true
}

// Prompt is the block for a session's system prompt: "" without
// instructions.
func Prompt(root, dir string) string {
	text := Instructions(root, dir, MaxInstructions)
	if text == "" {
		return ""
	}
	return "Project instructions (AGENTS.md files from the project root down to the current directory; where they disagree the later, nearer one wins):\n" + text
}
