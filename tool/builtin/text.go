package builtin

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/talaria-agent/talaria/internal/textcut"
)

// sniffLen is how much of a file decides whether it is text.
const sniffLen = 8 << 10

// isBinary guesses whether data (the start of a file) is not text: a NUL
// byte, or many control bytes. Invalid UTF-8 alone does not count, so
// Latin-1 text still reads (with replacement characters).
func isBinary(data []byte) bool {
	data = data[:min(len(data), sniffLen)]
	if bytes.IndexByte(data, 0) >= 0 {
		return true
	}
	control := 0
	for _, c := range data {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' && c != '\v' && c != 0x1b {
			control++
		}
	}
	return control > len(data)/10
}

// numbered formats one line the way read_file shows it, so the model can
// quote line numbers back.
func numbered(n int, line string) string {
	return fmt.Sprintf("%6d\t%s\n", n, line)
}

// clipLine shortens a very long line (minified code) for display; size is
// the full line's length, of which line may hold only a prefix.
func clipLine(line string, size, n int) string {
	if size <= n && len(line) <= n {
		return line
	}
	return textcut.Prefix(line, n) + fmt.Sprintf("… [line truncated, %d bytes in all]", size)
}

// countLines counts lines the way an editor does: a final line without a
// newline still counts.
func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// humanSize renders a byte count briefly.
func humanSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
}
