package builtin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/talaria-agent/talaria/tool"
)

const (
	// maxReadLines is how many lines one read_file call shows.
	maxReadLines = 2000
	// maxLineBytes clips single long lines (minified files).
	maxLineBytes = 2000
	// noteReserve keeps room in MaxOutput for the trailing note.
	noteReserve = 256
)

type readFileArgs struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
}

// ReadFile returns the read_file tool: numbered lines of a text file.
func ReadFile(opt Options) tool.Tool {
	opt = opt.withDefaults()
	return newTool(opt, tool.Info{
		Name: "read_file",
		Description: "Read a text file in the workspace. Returns lines numbered as \"<n>\\t<text>\". " +
			fmt.Sprintf("Shows at most %d lines per call; use start_line/end_line (1-based, inclusive) to read a range or continue. ", maxReadLines) +
			"Binary files are refused.",
		Parameters: schema(`"path":{"type":"string","description":"File path, relative to the workspace root."},`+
			`"start_line":{"type":"integer","minimum":1,"description":"First line to show (default 1)."},`+
			`"end_line":{"type":"integer","minimum":1,"description":"Last line to show (default: as many as fit)."}`, "path"),
		ReadOnly: true,
	}, func(ctx context.Context, ws workspace, a readFileArgs) tool.Result {
		return readFile(ctx, ws, a, opt.MaxOutput-noteReserve, opt.TextReader)
	})
}

func readFile(ctx context.Context, ws workspace, a readFileArgs, budget int, via TextReader) tool.Result {
	start := max(a.StartLine, 1)
	if a.EndLine > 0 && a.EndLine < start {
		return tool.Errorf("end_line (%d) is before start_line (%d)", a.EndLine, start)
	}
	t, err := ws.resolve(a.Path)
	if err != nil {
		return tool.Errorf("%v", err)
	}
	if via != nil {
		return readVia(ctx, ws, t, via, a, budget)
	}
	root, err := t.open()
	if err != nil {
		return tool.Errorf("cannot read %s: %v", a.Path, err)
	}
	defer root.Close()
	// Stat before opening: opening a FIFO for reading would block.
	fi, err := root.Stat(t.rel)
	if err != nil {
		return tool.Errorf("cannot read %s: %v", a.Path, plainErr(err))
	}
	if fi.IsDir() {
		return tool.Errorf("%s is a directory; use list_dir to see its entries", a.Path)
	}
	if !fi.Mode().IsRegular() {
		return tool.Errorf("%s is not a regular file", a.Path)
	}
	f, err := root.Open(t.rel)
	if err != nil {
		return tool.Errorf("cannot read %s: %v", a.Path, plainErr(err))
	}
	defer f.Close()

	r := bufio.NewReaderSize(f, 64<<10)
	if head, _ := r.Peek(sniffLen); isBinary(head) {
		return tool.Errorf("%s is a binary file (%s); read_file only shows text. "+
			"Use the shell tool (for example `file` or `xxd | head`) to inspect it.", a.Path, humanSize(fi.Size()))
	}
	return numberLines(ctx, r, a, budget)
}

// readVia reads the file through via (the editor), then shows it as a
// file on disk would be shown.
func readVia(ctx context.Context, ws workspace, t target, via TextReader, a readFileArgs, budget int) tool.Result {
	content, err := via.ReadTextFile(ctx, ws.outerPath(t))
	if err != nil {
		return tool.Errorf("cannot read %s through the editor: %v", a.Path, err)
	}
	if isBinary([]byte(content[:min(len(content), sniffLen)])) {
		return tool.Errorf("%s is a binary file (%s); read_file only shows text", a.Path, humanSize(int64(len(content))))
	}
	return numberLines(ctx, bufio.NewReaderSize(strings.NewReader(content), 64<<10), a, budget)
}

// numberLines shows the requested lines of r, numbered, within budget.
func numberLines(ctx context.Context, r *bufio.Reader, a readFileArgs, budget int) tool.Result {
	start := max(a.StartLine, 1)
	// Clip lines so that at least one always fits, however small MaxOutput.
	keep := min(maxLineBytes, max(budget-64, 32))
	var out strings.Builder
	total, last := 0, 0 // lines in the file, last line shown
	full := false       // output budget or line cap reached
	for {
		line, size, err := readLine(r, keep)
		if errors.Is(err, io.EOF) && line == nil {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return tool.Errorf("error reading %s: %v", a.Path, err)
		}
		total++
		if total%4096 == 0 && ctx.Err() != nil {
			return tool.Errorf("interrupted while reading %s", a.Path)
		}
		inRange := total >= start && (a.EndLine == 0 || total <= a.EndLine)
		if inRange && !full {
			s := numbered(total, clipLine(string(line), size, keep))
			if total-start >= maxReadLines || out.Len()+len(s) > budget {
				full = true
			} else {
				out.WriteString(s)
				last = total
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}

	switch {
	case total == 0:
		return tool.Result{Content: fmt.Sprintf("(%s is empty)", a.Path)}
	case start > total:
		return tool.Errorf("start_line %d is past the end of %s, which has %d lines", start, a.Path, total)
	}
	end := total
	if a.EndLine > 0 {
		end = min(a.EndLine, total)
	}
	if last < end {
		fmt.Fprintf(&out, "[showing lines %d-%d of %d; call read_file with start_line=%d to read more]\n",
			start, last, total, last+1)
	} else if start > 1 || end < total {
		fmt.Fprintf(&out, "[lines %d-%d of %d]\n", start, last, total)
	}
	return tool.Result{Content: out.String()}
}

// readLine reads one line without its line ending, keeping at most keep
// bytes of it so a huge line costs no memory; size is the line's full
// length. At the end of input it returns io.EOF with the last unterminated
// line, or with a nil line when there is none.
func readLine(r *bufio.Reader, keep int) (line []byte, size int, err error) {
	line = []byte{}
	for {
		chunk, err := r.ReadSlice('\n')
		size += len(chunk)
		if room := keep - len(line); room > 0 {
			line = append(line, chunk[:min(room, len(chunk))]...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil:
			line, size = trimEOL(line, size)
			return line, size, nil
		case errors.Is(err, io.EOF):
			if size == 0 {
				return nil, 0, io.EOF
			}
			return line, size, io.EOF
		default:
			return nil, 0, err
		}
	}
}

// trimEOL drops the "\n" (and a "\r" before it) that ended a line.
func trimEOL(line []byte, size int) ([]byte, int) {
	size--
	if len(line) > size {
		line = line[:size]
	}
	if size > 0 && len(line) == size && line[size-1] == '\r' {
		line, size = line[:size-1], size-1
	}
	return line, size
}
