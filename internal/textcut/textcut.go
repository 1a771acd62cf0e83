// Package textcut cuts text at UTF-8 character boundaries, so a clipped
// string stays valid text wherever it is shown or sent.
package textcut

import "unicode/utf8"

// Prefix returns the longest prefix of s of at most n bytes that ends on a
// character boundary.
func Prefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:max(n, 0)]
}

// Suffix returns the longest suffix of s of at most n bytes that starts on
// a character boundary.
func Suffix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	i := len(s) - max(n, 0)
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}
