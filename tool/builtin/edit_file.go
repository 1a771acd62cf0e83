package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/talaria-agent/talaria/tool"
)

const (
	// maxEditBytes bounds the files edit_file loads whole.
	maxEditBytes = 10 << 20
	// snippetContext is how many unchanged lines surround an edit's snippet.
	snippetContext = 3
	// maxSnippetLines bounds the snippet when the new text is long.
	maxSnippetLines = 40
)

type editFileArgs struct {
	Path       string  `json:"path"`
	OldString  string  `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
}

// EditFile returns the edit_file tool: exact string replacement.
func EditFile(opt Options) tool.Tool {
	return withChangedFile(opt, newTool(opt, tool.Info{
		Name: "edit_file",
		Description: "Replace an exact piece of text in a file. old_string must match the file exactly " +
			"(whitespace and indentation included) and be unique unless replace_all is true; include enough " +
			"surrounding lines to make it unique. Returns the changed region with line numbers.",
		Parameters: schema(`"path":{"type":"string","description":"File path, relative to the workspace root."},`+
			`"old_string":{"type":"string","minLength":1,"description":"The exact text to replace."},`+
			`"new_string":{"type":"string","description":"The replacement text (may be empty to delete)."},`+
			`"replace_all":{"type":"boolean","description":"Replace every occurrence (default false)."}`,
			"path", "old_string", "new_string"),
	}, func(ctx context.Context, ws workspace, a editFileArgs) tool.Result {
		if r := opt.writesRefused("edit_file"); r != nil {
			return *r
		}
		return editFile(ctx, ws, a, opt.TextReader, opt.TextWriter)
	}))
}

func editFile(ctx context.Context, ws workspace, a editFileArgs, from TextReader, to TextWriter) tool.Result {
	switch {
	case a.OldString == "":
		return tool.Errorf("old_string is empty; to create a file or replace all of it, use write_file")
	case a.NewString == nil:
		return tool.Errorf(`new_string is required (use "" to delete old_string)`)
	case a.OldString == *a.NewString:
		return tool.Errorf("old_string and new_string are identical; nothing would change")
	}
	t, root, bad := ws.openTarget(a.Path, "edit")
	if bad != nil {
		return *bad
	}
	defer root.Close()
	content, perm, bad := editSource(ctx, ws, root, t, a.Path, from)
	if bad != nil {
		return *bad
	}
	oldS, newS := a.OldString, *a.NewString

	n := strings.Count(content, oldS)
	if n == 0 && strings.Contains(content, "\r\n") && !strings.Contains(oldS, "\r") {
		// The model writes "\n" even when the file uses CRLF line endings.
		crlfOld := strings.ReplaceAll(oldS, "\n", "\r\n")
		if c := strings.Count(content, crlfOld); c > 0 {
			n, oldS, newS = c, crlfOld, strings.ReplaceAll(newS, "\n", "\r\n")
		}
	}
	switch {
	case n == 0:
		return tool.Errorf("%s", notFound(a.Path, content, oldS))
	case n > 1 && !a.ReplaceAll:
		return tool.Errorf("old_string matches %d times in %s (at lines %s); include more surrounding lines "+
			"in old_string to make it unique, or set replace_all to true to replace every occurrence",
			n, a.Path, matchLines(content, oldS, 10))
	}

	first := strings.Index(content, oldS)
	var updated string
	if a.ReplaceAll {
		updated = strings.ReplaceAll(content, oldS, newS)
	} else {
		updated = content[:first] + newS + content[first+len(oldS):]
	}
	if to != nil {
		if err := to.WriteTextFile(ctx, ws.outerPath(t), updated); err != nil {
			return tool.Errorf("cannot edit %s through the editor: %v", a.Path, err)
		}
	} else if err := writeAtomic(root, t.rel, []byte(updated), perm); err != nil {
		return tool.Errorf("cannot edit %s: %v", a.Path, err)
	}

	what := "replaced 1 occurrence"
	if n > 1 {
		what = fmt.Sprintf("replaced %d occurrences; the first one", n)
	}
	startLine := strings.Count(content[:first], "\n") + 1
	endLine := startLine + strings.Count(newS, "\n")
	return tool.Result{Content: fmt.Sprintf("edited %s: %s now reads:\n%s", t.show(), what,
		snippet(updated, startLine, endLine))}
}

// editSource reads the text edit_file changes: through from (the editor's
// buffer) when set, else from disk, which also gives the mode to keep.
func editSource(ctx context.Context, ws workspace, root *os.Root, t target, path string, from TextReader) (string, fs.FileMode, *tool.Result) {
	fail := func(format string, a ...any) (string, fs.FileMode, *tool.Result) {
		r := tool.Errorf(format, a...)
		return "", 0, &r
	}
	perm := fs.FileMode(0o644)
	fi, err := root.Stat(t.rel)
	switch {
	case err == nil && fi.IsDir():
		return fail("%s is a directory", path)
	case err == nil && !fi.Mode().IsRegular():
		return fail("%s is not a regular file", path)
	case err == nil:
		perm = fi.Mode().Perm()
	case from == nil || !errors.Is(err, fs.ErrNotExist):
		// An editor may hold an unsaved buffer of a file not on disk yet.
		return fail("cannot edit %s: %v", path, plainErr(err))
	}
	var data []byte
	if from != nil {
		s, err := from.ReadTextFile(ctx, ws.outerPath(t))
		if err != nil {
			return fail("cannot read %s through the editor: %v", path, err)
		}
		data = []byte(s)
	} else {
		if fi.Size() > maxEditBytes {
			return fail("%s is too large to edit (%s); use the shell tool", path, humanSize(fi.Size()))
		}
		if data, err = root.ReadFile(t.rel); err != nil {
			return fail("cannot edit %s: %v", path, plainErr(err))
		}
	}
	if len(data) > maxEditBytes {
		return fail("%s is too large to edit (%s); use the shell tool", path, humanSize(int64(len(data))))
	}
	if isBinary(data) {
		return fail("%s is a binary file; edit_file only edits text", path)
	}
	return string(data), perm, nil
}

// snippet shows lines from-to of content, with context, numbered.
func snippet(content string, from, to int) string {
	lines := strings.Split(content, "\n")
	lo := max(from-snippetContext, 1)
	hi := min(to+snippetContext, len(lines))
	if strings.HasSuffix(content, "\n") && hi == len(lines) {
		hi-- // the empty string after the final newline is not a line
	}
	var b strings.Builder
	for n := lo; n <= hi; n++ {
		if n-lo == maxSnippetLines {
			fmt.Fprintf(&b, "[… %d more lines]\n", hi-n+1)
			break
		}
		b.WriteString(numbered(n, clipLine(strings.TrimSuffix(lines[n-1], "\r"), len(lines[n-1]), maxLineBytes)))
	}
	return b.String()
}

// matchLines lists the line numbers where s occurs, at most limit of them.
func matchLines(content, s string, limit int) string {
	var nums []string
	line, off := 1, 0
	for len(nums) < limit {
		i := strings.Index(content[off:], s)
		if i < 0 {
			break
		}
		line += strings.Count(content[off:off+i], "\n")
		nums = append(nums, fmt.Sprint(line))
		line += strings.Count(s, "\n")
		off += i + len(s)
	}
	if strings.Count(content[off:], s) > 0 {
		nums = append(nums, "…")
	}
	return strings.Join(nums, ", ")
}

// notFound explains a failed match and points at the closest line, which
// usually reveals the mistake (indentation, a stale copy).
func notFound(path, content, old string) string {
	msg := fmt.Sprintf("old_string was not found in %s; it must match the file exactly, including whitespace "+
		"and indentation (read the file again if it may have changed)", path)
	if n, line, ok := closestLine(content, old); ok {
		msg += fmt.Sprintf(". The closest line is:\n%s", numbered(n, clipLine(line, len(line), 300)))
	}
	return msg
}
