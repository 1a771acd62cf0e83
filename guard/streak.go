package guard

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"io"
	"strings"
	"sync"
)

// DefaultStreakThreshold is the streak length at which the notice starts.
const DefaultStreakThreshold = 3

// Streak tracks the run of identical consecutive tool calls within a turn:
// same tool, same canonical arguments, same result. It is safe for
// concurrent use; calls count in the order Observe sees them.
type Streak struct {
	threshold int

	mu    sync.Mutex
	key   [sha256.Size]byte
	count int
}

// NewStreak returns a Streak that starts its notice at the threshold-th
// identical call; threshold < 1 selects DefaultStreakThreshold.
func NewStreak(threshold int) *Streak {
	if threshold < 1 {
		threshold = DefaultStreakThreshold
	}
	return &Streak{threshold: threshold}
}

// Observe records one completed call and returns the length of the current
// streak and the notice line to append to this call's result: "" below the
// threshold, FormatIdenticalCallNotice at and above it. Pass the raw result,
// before any notice is appended, or the notice would break the match.
//
// Arguments are compared canonically (JSON re-encoded with sorted keys and
// no white space; empty arguments equal {}; invalid JSON as is), results by
// hash. A repeatable tool (a poller) is exempt: it gets (0, "") and leaves the
// streak as it was. Any other call that differs, or the same call with a
// different result, starts a new streak of 1.
func (s *Streak) Observe(toolName, args, result string, repeatable bool) (count int, notice string) {
	if repeatable {
		return 0, ""
	}
	k := streakKey(toolName, canonicalArgs(args), result)
	s.mu.Lock()
	if s.count > 0 && k == s.key {
		s.count++
	} else {
		s.key, s.count = k, 1
	}
	count = s.count
	s.mu.Unlock()
	if count < s.threshold {
		return count, ""
	}
	return count, FormatIdenticalCallNotice(count, toolName)
}

// Reset ends the streak; the engine calls it at the start of every turn.
func (s *Streak) Reset() {
	s.mu.Lock()
	s.key, s.count = [sha256.Size]byte{}, 0
	s.mu.Unlock()
}

// streakKey hashes the three parts length-prefixed, so ("ab","c") and
// ("a","bc") differ and a large result costs one hash, not a stored copy.
// Parts go through a small buffer: the hash takes no strings, and
// converting a large result would copy all of it.
func streakKey(name, args, result string) [sha256.Size]byte {
	h := sha256.New()
	buf := make([]byte, 1024)
	for _, part := range [3]string{name, args, result} {
		binary.LittleEndian.PutUint64(buf[:8], uint64(len(part)))
		h.Write(buf[:8])
		for len(part) > 0 {
			n := copy(buf, part)
			h.Write(buf[:n])
			part = part[n:]
		}
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// canonicalArgs re-encodes JSON arguments so key order and white space do
// not defeat the match. Numbers keep their text (json.Number), so 1 and 1.0
// stay distinct, as the tool may treat them.
func canonicalArgs(args string) string {
	s := strings.TrimSpace(args)
	if s == "" {
		return "{}"
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return args
	}
	if _, err := dec.Token(); err != io.EOF { // trailing data: not one JSON value
		return args
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return args
	}
	return strings.TrimSuffix(b.String(), "\n")
}
