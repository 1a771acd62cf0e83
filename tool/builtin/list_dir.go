package builtin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/talaria-agent/talaria/tool"
)

const (
	// maxListEntries bounds what list_dir shows.
	maxListEntries = 500
	// maxListCount bounds how far list_dir keeps counting what it does not show.
	maxListCount     = 100000
	defaultListDepth = 2
	maxListDepth     = 10
)

type listDirArgs struct {
	Path  string `json:"path"`
	Depth int    `json:"depth"`
}

// ListDir returns the list_dir tool: a bounded listing of a directory tree.
func ListDir(opt Options) tool.Tool {
	return newTool(opt, tool.Info{
		Name: "list_dir",
		Description: fmt.Sprintf("List a directory of the workspace, recursively down to depth levels. "+
			"Directories end in \"/\", files show their size, symlinks show their target; .git is skipped. "+
			"Paths are relative to the workspace root. At most %d entries, shallowest first.", maxListEntries),
		Parameters: schema(fmt.Sprintf(`"path":{"type":"string","description":"Directory, relative to the workspace root (default: the root)."},`+
			`"depth":{"type":"integer","minimum":1,"maximum":%d,"description":"How many levels to descend (default %d; 1 lists only the entries of the directory itself)."}`,
			maxListDepth, defaultListDepth)),
		ReadOnly: true,
	}, listDir)
}

// listEntry is one line of the listing.
type listEntry struct {
	rel  string // relative to the workspace root, slash-separated
	text string
}

func listDir(ctx context.Context, ws workspace, a listDirArgs) tool.Result {
	if a.Path == "" {
		a.Path = "."
	}
	depth := a.Depth
	if depth <= 0 {
		depth = defaultListDepth
	}
	depth = min(depth, maxListDepth)
	t, err := ws.resolve(a.Path)
	if err != nil {
		return tool.Errorf("%v", err)
	}
	fi, err := os.Lstat(t.real)
	if err != nil {
		return tool.Errorf("cannot list %s: %v", a.Path, plainErr(err))
	}
	if !fi.IsDir() {
		return tool.Result{Content: describeEntry(t.real, t.show(), fi) + "\n"}
	}

	var shown []listEntry
	var problems []string
	hidden := 0 // entries found but not shown
	level := []string{t.real}
	for d := 1; d <= depth && len(level) > 0; d++ {
		var next []string
		for _, dir := range level {
			if err := ctx.Err(); err != nil {
				return tool.Errorf("interrupted while listing %s", a.Path)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", relTo(t.root, dir), plainErr(err)))
				continue
			}
			for _, e := range entries {
				if e.Name() == ".git" && e.IsDir() {
					continue
				}
				full := filepath.Join(dir, e.Name())
				if len(shown) >= maxListEntries {
					hidden++
				} else {
					info, err := e.Info()
					if err != nil {
						continue // vanished since ReadDir
					}
					rel := relTo(t.root, full)
					shown = append(shown, listEntry{rel: rel, text: describeEntry(full, rel, info)})
				}
				// Symlinked directories are shown, never entered: their
				// target may be outside the workspace or form a cycle.
				if e.IsDir() && hidden < maxListCount {
					next = append(next, full)
				}
			}
		}
		level = next
	}

	if len(shown) == 0 && len(problems) == 0 {
		return tool.Result{Content: fmt.Sprintf("%s is empty\n", t.show())}
	}
	sort.Slice(shown, func(i, j int) bool { return shown[i].rel < shown[j].rel })
	var b strings.Builder
	for _, e := range shown {
		b.WriteString(e.text)
		b.WriteByte('\n')
	}
	for _, p := range problems {
		fmt.Fprintf(&b, "[could not read %s]\n", p)
	}
	if hidden > 0 {
		more := fmt.Sprint(hidden)
		if hidden >= maxListCount {
			more = "more than " + more
		}
		fmt.Fprintf(&b, "[%s more entries not shown; list a subdirectory or use a smaller depth]\n", more)
	}
	return tool.Result{Content: b.String()}
}

// describeEntry renders one entry: "dir/", "file  12 B" or "link -> target".
func describeEntry(full, rel string, fi os.FileInfo) string {
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		dest, err := os.Readlink(full)
		if err != nil {
			return rel + " -> ?"
		}
		return rel + " -> " + dest
	case fi.IsDir():
		return rel + "/"
	case fi.Mode().IsRegular():
		return fmt.Sprintf("%s  %s", rel, humanSize(fi.Size()))
	default:
		return fmt.Sprintf("%s  (%s)", rel, fi.Mode().Type())
	}
}

// relTo returns p relative to root, slash-separated.
func relTo(root, p string) string {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(rel)
}
