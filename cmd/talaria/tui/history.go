package tui

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// maxHistory bounds the entries kept in the history file.
const maxHistory = 1000

// history is the messages typed in any chat, oldest first, one JSON string
// a line in the file (a message may span lines).
type history struct {
	path    string
	entries []string
	pos     int    // len(entries): not browsing
	draft   string // what was typed before browsing began
}

func loadHistory(path string) *history {
	h := &history{path: path}
	if path == "" {
		return h
	}
	f, err := os.Open(path)
	if err != nil {
		return h
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var s string
		if json.Unmarshal(sc.Bytes(), &s) == nil && s != "" {
			h.entries = append(h.entries, s)
		}
	}
	if len(h.entries) > maxHistory {
		h.entries = h.entries[len(h.entries)-maxHistory:]
	}
	h.pos = len(h.entries)
	return h
}

// add records s and appends it to the file; an error writing it is not
// worth interrupting a chat for.
func (h *history) add(s string) {
	h.pos = len(h.entries)
	if strings.TrimSpace(s) == "" || (len(h.entries) > 0 && h.entries[len(h.entries)-1] == s) {
		h.pos = len(h.entries)
		return
	}
	h.entries = append(h.entries, s)
	h.pos = len(h.entries)
	if h.path == "" {
		return
	}
	_ = os.MkdirAll(filepath.Dir(h.path), 0o700)
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	b, _ := json.Marshal(s)
	_, _ = f.Write(append(b, '\n'))
}

// prev moves back; current is the input, kept as the draft when browsing
// starts. ok is false at the oldest entry.
func (h *history) prev(current string) (string, bool) {
	if h.pos == 0 {
		return "", false
	}
	if h.pos == len(h.entries) {
		h.draft = current
	}
	h.pos--
	return h.entries[h.pos], true
}

func (h *history) next() (string, bool) {
	if h.pos >= len(h.entries) {
		return "", false
	}
	h.pos++
	if h.pos == len(h.entries) {
		return h.draft, true
	}
	return h.entries[h.pos], true
}

// search returns the newest entry older than before that contains q.
func (h *history) search(q string, before int) (string, int, bool) {
	for i := min(before, len(h.entries)) - 1; i >= 0; i-- {
		if strings.Contains(h.entries[i], q) {
			return h.entries[i], i, true
		}
	}
	return "", 0, false
}
