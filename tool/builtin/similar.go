package builtin

import (
	"strings"

	"github.com/talaria-agent/talaria/internal/textcut"
)

// maxSimilarLines bounds the lines closestLine compares.
const maxSimilarLines = 50000

// closestLine finds the line of content most similar to the first
// non-blank line of want, by bigram overlap (Dice coefficient), which is
// linear in the line length. ok is false when nothing is similar enough to
// be a useful hint.
func closestLine(content, want string) (num int, line string, ok bool) {
	var target string
	for _, l := range strings.Split(want, "\n") {
		if t := strings.TrimSpace(l); t != "" {
			target = t
			break
		}
	}
	if target == "" {
		return 0, "", false
	}
	tb := bigrams(textcut.Prefix(target, 500))
	best := 0.0
	for i, l := range strings.SplitN(content, "\n", maxSimilarLines) {
		score := dice(tb, bigrams(textcut.Prefix(strings.TrimSpace(l), 500)))
		if score > best {
			best, num, line = score, i+1, strings.TrimSuffix(l, "\r")
		}
	}
	return num, line, best >= 0.5
}

func bigrams(s string) map[string]int {
	r := []rune(s)
	m := make(map[string]int, len(r))
	for i := 0; i+1 < len(r); i++ {
		m[string(r[i:i+2])]++
	}
	if len(r) == 1 {
		m[s]++
	}
	return m
}

func dice(a, b map[string]int) float64 {
	na, nb, common := 0, 0, 0
	for k, ca := range a {
		na += ca
		common += min(ca, b[k])
	}
	for _, cb := range b {
		nb += cb
	}
	if na+nb == 0 {
		return 0
	}
	return 2 * float64(common) / float64(na+nb)
}
