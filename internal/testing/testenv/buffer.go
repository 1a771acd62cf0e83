package testenv

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is an output sink safe for concurrent writes and reads, like the
// *os.File it stands in for: turns print from their own goroutines while a
// test reads.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Contains reports whether sub was written.
func (s *Buffer) Contains(sub string) bool { return strings.Contains(s.String(), sub) }
