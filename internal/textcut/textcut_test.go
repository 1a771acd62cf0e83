package textcut

import (
	"testing"
	"unicode/utf8"
)

func TestCutsOnCharacterBoundaries(t *testing.T) {
	s := "añb€c" // a, ñ (2 bytes), b, € (3 bytes), c: 8 bytes
	for n := -1; n <= len(s)+1; n++ {
		p, q := Prefix(s, n), Suffix(s, n)
		if !utf8.ValidString(p) || !utf8.ValidString(q) {
			t.Fatalf("n=%d: invalid cut %q / %q", n, p, q)
		}
		if len(p) > max(n, 0) || len(q) > max(n, 0) {
			t.Fatalf("n=%d: cut longer than n: %q / %q", n, p, q)
		}
		if s[:len(p)] != p || s[len(s)-len(q):] != q {
			t.Fatalf("n=%d: not a prefix/suffix: %q / %q", n, p, q)
		}
	}
	if got := Prefix(s, 2); got != "a" {
		t.Fatalf("Prefix(s, 2) = %q, want the character before ñ's second byte", got)
	}
	if got := Suffix(s, 3); got != "c" {
		t.Fatalf("Suffix(s, 3) = %q, want the whole characters of the last 3 bytes", got)
	}
}
