package transcript

import (
	"strings"
	"unicode/utf8"
)

// CleanText returns s as valid UTF-8: every invalid byte and every encoded
// lone surrogate (the CESU-8/WTF-8 bytes ED A0–BF xx, which Go's decoder
// rejects but some tools and JVM programs emit) becomes U+FFFD. An encoded
// surrogate pair is turned into the character it stands for rather than
// lost. When s is already valid it is returned as is, without allocating.
func CleanText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			b.WriteByte(s[i])
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || size > 1 { // size 3 is a genuine U+FFFD
			b.WriteString(s[i : i+size])
			i += size
			continue
		}
		hi, ok := surrogateAt(s, i)
		if !ok {
			b.WriteRune(utf8.RuneError)
			i++
			continue
		}
		if lo, ok := surrogateAt(s, i+3); ok && isHigh(hi) && !isHigh(lo) {
			b.WriteRune(0x10000 + (hi-0xD800)<<10 + (lo - 0xDC00))
			i += 6
			continue
		}
		b.WriteRune(utf8.RuneError)
		i += 3
	}
	return b.String()
}

// surrogateAt decodes a surrogate code point encoded as three bytes at s[i].
func surrogateAt(s string, i int) (rune, bool) {
	if i+2 >= len(s) || s[i] != 0xED || s[i+1] < 0xA0 || s[i+1] > 0xBF || s[i+2] < 0x80 || s[i+2] > 0xBF {
		return 0, false
	}
	return 0xD000 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F), true
}

func isHigh(r rune) bool { return r < 0xDC00 }

// cleanJSONEscapes replaces \uXXXX escapes of lone surrogates in JSON text
// with \ufffd. Such JSON is valid to Go but makes strict decoders (and
// servers that re-encode to UTF-8) fail. Escaped backslashes are skipped,
// so the text "\\ud800" is left alone. Clean text is returned as is.
func cleanJSONEscapes(s string) string {
	if !strings.Contains(s, `\u`) {
		return s
	}
	var b *strings.Builder
	done := 0 // s[:done] is in b
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			continue
		}
		if s[i+1] != 'u' {
			i++ // skip the escaped character, which may be a backslash
			continue
		}
		r, ok := hex4(s, i+2)
		if !ok {
			i++
			continue
		}
		if r < 0xD800 || r > 0xDFFF {
			i += 5
			continue
		}
		if r < 0xDC00 && i+11 < len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
			if lo, ok := hex4(s, i+8); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				i += 11 // a proper pair
				continue
			}
		}
		if b == nil {
			b = new(strings.Builder)
			b.Grow(len(s))
		}
		b.WriteString(s[done:i])
		b.WriteString(`\ufffd`)
		done = i + 6
		i += 5
	}
	if b == nil {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// hex4 parses four hex digits at s[i:].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
