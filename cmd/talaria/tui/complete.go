package tui

import (
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// maxFiles bounds the workspace walk behind @path completion.
const maxFiles = 20000

// skipDirs are not worth completing into.
var skipDirs = map[string]bool{".git": true, "node_modules": true, "vendor": true, ".cache": true}

// workspaceFiles lists the files under root, relative, slash-separated.
func workspaceFiles(root string) []string {
	if root == "" {
		return nil
	}
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if len(out) >= maxFiles {
			return filepath.SkipAll
		}
		if d.IsDir() {
			if p != root && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if rel, err := filepath.Rel(root, p); err == nil {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// lastWord returns the word the cursor ends, for completion: the text
// after the last space or newline of s.
func lastWord(s string) string {
	i := strings.LastIndexAny(s, " \n\t")
	return s[i+1:]
}

// completions returns the candidates for word: slash commands for "/x" at
// the start of the input, workspace files for "@x".
func (m *model) completions(input string) (word string, cands []string) {
	word = lastWord(input)
	switch {
	case strings.HasPrefix(input, "/") && word == input:
		for _, c := range m.commands() {
			if strings.HasPrefix(c.Name, word) {
				cands = append(cands, c.Name)
			}
		}
	case strings.HasPrefix(word, "@"):
		if m.files == nil {
			m.files = workspaceFiles(m.ui.opts.Workspace)
			if m.files == nil {
				m.files = []string{}
			}
		}
		q := word[1:]
		for _, f := range m.files {
			if strings.HasPrefix(f, q) {
				cands = append(cands, "@"+f)
			}
		}
		if len(cands) == 0 && q != "" {
			for _, f := range m.files {
				if strings.Contains(f, q) {
					cands = append(cands, "@"+f)
				}
			}
		}
	}
	return word, cands
}

// commonPrefix of non-empty ss.
func commonPrefix(ss []string) string {
	p := ss[0]
	for _, s := range ss[1:] {
		for !strings.HasPrefix(s, p) {
			p = p[:len(p)-1]
		}
	}
	return p
}
