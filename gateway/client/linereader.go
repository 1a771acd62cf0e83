package client

import (
	"bufio"
	"bytes"
	"io"
)

// lineReader reads lines of any length without their line ending.
type lineReader struct{ r *bufio.Reader }

func newLineReader(r io.Reader) *lineReader { return &lineReader{r: bufio.NewReaderSize(r, 64<<10)} }

func (l *lineReader) line() ([]byte, error) {
	b, err := l.r.ReadBytes('\n')
	if err != nil && (len(b) == 0 || err != io.EOF) {
		return nil, err
	}
	return bytes.TrimRight(b, "\r\n"), nil
}
