// Package thinktags moves inline reasoning tags (<think>…</think>) out of
// answer text.
package thinktags

import "strings"

// thinkTags are the inline reasoning tags some servers put in the answer
// text (DeepSeek-R1 and Qwen templates on llama.cpp, vLLM or Ollama without
// a reasoning parser; prompted "thinking" models).
var thinkTags = [...]string{"think", "thinking", "reasoning", "thought"}

// Splitter moves inline reasoning tags out of streamed answer text:
// "<think>…</think>" becomes reasoning, never text, so it is neither shown
// as the answer nor stitched into a continued one. A tag opens only where
// no visible text came before it (the start of the answer, or right after
// a closed block), so an answer that talks about tags keeps them. Tags cut
// across chunks are held back until they can be told apart. The zero value
// is ready to use; it serves one answer.
type Splitter struct {
	pend    string // held back: a possible partial tag
	closing string // the close tag of the open block; "" outside a block
	visible bool   // visible text was emitted: no tag opens any more
	trim    bool   // drop white space right after a close tag
}

// Feed takes the next chunk of answer text and returns the parts of it
// that are answer text and reasoning.
func (s *Splitter) Feed(chunk string) (text, reasoning string) {
	buf := s.pend + chunk
	s.pend = ""
	var tb, rb strings.Builder
	for buf != "" {
		if s.closing != "" {
			low := asciiLower(buf)
			i := strings.Index(low, s.closing)
			if i < 0 {
				keep := partialSuffix(low, s.closing)
				rb.WriteString(buf[:len(buf)-keep])
				s.pend = buf[len(buf)-keep:]
				break
			}
			rb.WriteString(buf[:i])
			buf = buf[i+len(s.closing):]
			s.closing, s.trim = "", true
			continue
		}
		if s.trim {
			buf = strings.TrimLeft(buf, " \t\r\n")
			if buf == "" {
				break
			}
			s.trim = false
		}
		if s.visible {
			tb.WriteString(buf)
			break
		}
		lead := len(buf) - len(strings.TrimLeft(buf, " \t\r\n"))
		rest := buf[lead:]
		if rest == "" {
			s.pend = buf // only white space so far: a tag may still come
			break
		}
		if tag, n, partial := openTag(rest); tag != "" {
			s.closing = "</" + tag + ">"
			buf = rest[n:]
			continue
		} else if partial {
			s.pend = buf
			break
		}
		s.visible = true
		tb.WriteString(buf)
		break
	}
	return tb.String(), rb.String()
}

// Flush returns what is still held back at the end of the answer: an
// unfinished tag is text, an unclosed block's tail reasoning.
func (s *Splitter) Flush() (text, reasoning string) {
	p := s.pend
	s.pend = ""
	if s.closing != "" {
		return "", p
	}
	if !s.visible {
		p = strings.TrimSpace(p)
		if p == "" {
			return "", ""
		}
	}
	return p, ""
}

// openTag matches an open tag at the start of s. partial says s may be the
// beginning of one, cut by the chunk boundary.
func openTag(s string) (tag string, n int, partial bool) {
	if s[0] != '<' {
		return "", 0, false
	}
	low := asciiLower(s[:min(len(s), 12)])
	for _, t := range thinkTags {
		open := "<" + t + ">"
		if strings.HasPrefix(low, open) {
			return t, len(open), false
		}
		if len(low) < len(open) && strings.HasPrefix(open, low) {
			partial = true
		}
	}
	return "", 0, partial
}

// partialSuffix is the length of the longest suffix of s that begins tag.
func partialSuffix(s, tag string) int {
	for n := min(len(s), len(tag)-1); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}

// Split splits a whole answer text the way a Splitter fed
// with it at once would.
func Split(text string) (answer, reasoning string) {
	var s Splitter
	t, r := s.Feed(text)
	ft, fr := s.Flush()
	return t + ft, r + fr
}

// asciiLower lowers ASCII letters only, so byte offsets stay valid.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// SplitOrphanClose handles the form where the chat template opened the
// reasoning block in the prompt, so the answer starts inside it and only a
// closing tag ("…</think>\n\nAnswer") shows where it ends: the text before
// the first close tag is reasoning. ok is false (and text is returned as it
// is) when no close tag comes before any open tag.
func SplitOrphanClose(text string) (answer, reasoning string, ok bool) {
	low := asciiLower(text)
	for _, t := range thinkTags {
		i := strings.Index(low, "</"+t+">")
		if i < 0 || strings.Contains(low[:i], "<"+t+">") {
			continue
		}
		return strings.TrimLeft(text[i+len(t)+3:], " \t\r\n"), strings.TrimSpace(text[:i]), true
	}
	return text, "", false
}
