package main

import (
	"io"
	"os"
	"sync"
)

// Terminal control sequences in text that came from files, command output
// or the model (a window title, clear screen, OSC 8 links, OSC 52 clipboard
// writes) must not reach a terminal: the CLI writes through a termWriter
// whenever stdout or stderr is one. The store and --json keep the bytes as
// they are (JSON escapes control characters anyway).

// isTerminal reports whether v (stdin, stdout or stderr) is a character
// device such as a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// termSafe removes control sequences and control characters (except
// newline and tab) from s.
func termSafe(s string) string {
	var f termFilter
	return string(f.filter(nil, []byte(s)))
}

// termFilter is the state machine behind termSafe and termWriter; the
// state carries over between writes, so a sequence split across two
// streamed deltas is still removed whole.
type termFilter struct {
	state termState
	n     int // bytes eaten in a string sequence, to bound a runaway one
}

type termState uint8

const (
	stNormal    termState = iota
	stEsc                 // after ESC
	stCSI                 // ESC [ … final byte
	stString              // OSC, DCS, SOS, PM, APC: … BEL or ESC \
	stStringEsc           // ESC inside a string sequence
	stC2                  // a 0xC2 lead byte: U+0080–U+009F are C1 controls
)

// maxStringSeq bounds an unterminated OSC/DCS: past it the filter gives
// up eating and shows text again.
const maxStringSeq = 4096

func (f *termFilter) filter(dst, src []byte) []byte {
	for _, b := range src {
		switch f.state {
		case stNormal:
			switch {
			case b == 0x1b:
				f.state = stEsc
			case b == '\n' || b == '\t':
				dst = append(dst, b)
			case b < 0x20 || b == 0x7f:
				// other C0 controls (BEL, BS, CR …) are dropped
			case b == 0xc2:
				f.state = stC2
			default:
				dst = append(dst, b)
			}
		case stC2:
			f.state = stNormal
			switch {
			case b == 0x9b: // 8-bit CSI
				f.state = stCSI
				continue
			case b == 0x9d || b == 0x90 || b == 0x98 || b == 0x9e || b == 0x9f: // OSC, DCS, SOS, PM, APC
				f.state, f.n = stString, 0
				continue
			case b >= 0x80 && b <= 0x9f: // any other C1 control
				continue
			}
			dst = append(dst, 0xc2)
			if b == 0x1b {
				f.state = stEsc
				continue
			}
			dst = append(dst, b)
		case stEsc:
			switch {
			case b == '[':
				f.state = stCSI
			case b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_':
				f.state, f.n = stString, 0
			case b >= 0x20 && b <= 0x2f:
				// intermediate bytes (ESC ( B …): keep eating
			default:
				f.state = stNormal // a two-byte escape such as ESC c
			}
		case stCSI:
			switch {
			case b >= 0x40 && b <= 0x7e:
				f.state = stNormal
			case b >= 0x20 && b <= 0x3f:
			default:
				// not a CSI after all: drop the sequence, keep the byte
				f.state = stNormal
				dst = f.filter(dst, []byte{b})
			}
		case stString, stStringEsc:
			f.n++
			switch {
			case b == 0x07:
				f.state = stNormal
			case f.state == stStringEsc && b == '\\':
				f.state = stNormal
			case b == 0x1b:
				f.state = stStringEsc
			default:
				f.state = stString
				if f.n > maxStringSeq {
					f.state = stNormal
				}
			}
		}
	}
	return dst
}

// termWriter filters what is written to a terminal.
type termWriter struct {
	mu  sync.Mutex
	w   io.Writer
	f   termFilter
	buf []byte
}

func newTermWriter(w io.Writer) *termWriter { return &termWriter{w: w} }

// Write reports len(p) written when the filtered bytes were: what was
// removed on purpose is not a short write.
func (t *termWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = t.f.filter(t.buf[:0], p)
	if len(t.buf) == 0 {
		return len(p), nil
	}
	if _, err := t.w.Write(t.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}
