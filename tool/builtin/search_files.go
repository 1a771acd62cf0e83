package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/talaria-agent/talaria/tool"
)

const (
	defaultMaxResults = 100
	maxMaxResults     = 1000
	// maxSearchFileBytes: bigger files are skipped (logs, data, bundles).
	maxSearchFileBytes = 2 << 20
	// maxSearchFiles bounds the walk so one call cannot scan a whole disk.
	maxSearchFiles = 100000
	// maxMatchLineBytes clips the text shown for a matching line.
	maxMatchLineBytes = 300
)

type searchFilesArgs struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	Glob       string `json:"glob"`
	MaxResults int    `json:"max_results"`
}

// SearchFiles returns the search_files tool: a regexp search over the
// workspace's text files.
func SearchFiles(opt Options) tool.Tool {
	opt = opt.withDefaults()
	return newTool(opt, tool.Info{
		Name: "search_files",
		Description: "Search the workspace's text files for lines matching a regular expression (Go RE2 syntax: " +
			"no lookaround or backreferences; (?i) for case-insensitive). Prints \"path:line: text\". " +
			"Skips .git, binary files, symlinks and files over 2 MiB.",
		Parameters: schema(fmt.Sprintf(`"pattern":{"type":"string","minLength":1,"description":"Regular expression matched against each line."},`+
			`"path":{"type":"string","description":"File or directory to search, relative to the workspace root (default: the root)."},`+
			`"glob":{"type":"string","description":"Only search files matching this glob: \"*.go\" matches names at any depth; a glob with / matches paths relative to path, e.g. \"src/**/*.{ts,tsx}\"."},`+
			`"max_results":{"type":"integer","minimum":1,"maximum":%d,"description":"Most matches to print (default %d)."}`,
			maxMaxResults, defaultMaxResults), "pattern"),
		ReadOnly: true,
	}, func(ctx context.Context, ws workspace, a searchFilesArgs) tool.Result {
		return searchFiles(ctx, ws, a, opt.MaxOutput-noteReserve)
	})
}

// searchStats counts what a search did, for the summary line.
type searchStats struct {
	files, tooBig, binary, matches, shown int
	stopped                               bool // hit maxSearchFiles
}

func searchFiles(ctx context.Context, ws workspace, a searchFilesArgs, budget int) tool.Result {
	if a.Pattern == "" {
		return tool.Errorf("pattern is empty")
	}
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return tool.Errorf("invalid pattern (Go RE2 syntax): %v", err)
	}
	var glob *globMatcher
	if a.Glob != "" {
		g, err := newGlob(a.Glob)
		if err != nil {
			return tool.Errorf("invalid glob %q: %v", a.Glob, err)
		}
		glob = &g
	}
	limit := a.MaxResults
	if limit <= 0 {
		limit = defaultMaxResults
	}
	limit = min(limit, maxMaxResults)
	if a.Path == "" {
		a.Path = "."
	}
	t, root, bad := ws.openTarget(a.Path, "search")
	if bad != nil {
		return *bad
	}
	defer root.Close()

	s := &searcher{root: root, re: re, limit: limit, budget: budget}
	walkErr := filepath.WalkDir(t.real, func(p string, d fs.DirEntry, err error) error {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if err != nil {
			if p == t.real {
				return err
			}
			return nil // unreadable entry: skip it, keep searching
		}
		if d.IsDir() {
			if d.Name() == ".git" && p != t.real {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() { // symlinks, sockets, devices
			return nil
		}
		rel := relTo(t.root, p)
		if glob != nil && !glob.match(relTo(t.real, p)) && !(p == t.real && glob.match(d.Name())) {
			return nil
		}
		if s.st.files >= maxSearchFiles {
			s.st.stopped = true
			return filepath.SkipAll
		}
		s.st.files++
		s.file(rel)
		return nil
	})
	if errors.Is(walkErr, context.Canceled) || errors.Is(walkErr, context.DeadlineExceeded) {
		return tool.Errorf("interrupted while searching %s", a.Path)
	}
	if walkErr != nil {
		return tool.Errorf("cannot search %s: %v", a.Path, plainErr(walkErr))
	}
	return tool.Result{Content: searchSummary(a, &s.out, s.st)}
}

// searcher accumulates one search's output and counts.
type searcher struct {
	root          *os.Root
	re            *regexp.Regexp
	limit, budget int
	out           strings.Builder
	st            searchStats
	full          bool // the output budget is spent; only count from now on
}

// file scans one file (rel: relative to the root, slash-separated),
// printing matches while limit and budget allow and counting the rest.
func (s *searcher) file(rel string) {
	name := filepath.FromSlash(rel)
	fi, err := s.root.Stat(name)
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	if fi.Size() > maxSearchFileBytes {
		s.st.tooBig++
		return
	}
	data, err := s.root.ReadFile(name)
	if err != nil {
		return
	}
	if isBinary(data) {
		s.st.binary++
		return
	}
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if !s.re.MatchString(line) {
			continue
		}
		s.st.matches++
		if s.st.shown >= s.limit || s.full {
			continue
		}
		text := fmt.Sprintf("%s:%d: %s\n", rel, n+1, clipLine(line, len(line), maxMatchLineBytes))
		if s.out.Len()+len(text) > s.budget {
			s.full = true
			continue
		}
		s.out.WriteString(text)
		s.st.shown++
	}
}

func searchSummary(a searchFilesArgs, out *strings.Builder, st searchStats) string {
	var notes []string
	if st.tooBig > 0 {
		notes = append(notes, fmt.Sprintf("%d files over 2 MiB skipped", st.tooBig))
	}
	if st.binary > 0 {
		notes = append(notes, fmt.Sprintf("%d binary files skipped", st.binary))
	}
	if st.stopped {
		notes = append(notes, fmt.Sprintf("stopped after %d files; narrow path or glob", maxSearchFiles))
	}
	if st.matches == 0 {
		msg := fmt.Sprintf("no matches for %q in %s (%d files searched)", a.Pattern, a.Path, st.files)
		if len(notes) > 0 {
			msg += "; " + strings.Join(notes, "; ")
		}
		return msg + "\n"
	}
	if hidden := st.matches - st.shown; hidden > 0 {
		notes = append(notes, fmt.Sprintf("%d more matches not shown; narrow the pattern, path or glob, or raise max_results", hidden))
	}
	if len(notes) > 0 {
		fmt.Fprintf(out, "[%s]\n", strings.Join(notes, "; "))
	}
	return out.String()
}
