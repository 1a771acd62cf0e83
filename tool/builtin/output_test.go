package builtin

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCapText(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		limit int
	}{
		{"ascii", strings.Repeat("0123456789", 1000), 600},
		{"multibyte", strings.Repeat("é€😀", 2000), 601},
		{"tiny limit", strings.Repeat("x", 5000), 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := capText(tt.in, tt.limit)
			if len(got) > tt.limit && tt.limit >= 64 {
				t.Errorf("%d bytes, over limit %d", len(got), tt.limit)
			}
			if !utf8.ValidString(got) {
				t.Error("cut inside a rune")
			}
			i := strings.Index(got, "\n[… ")
			j := strings.Index(got, " bytes of output omitted …]\n")
			if i < 0 || j < 0 {
				t.Fatalf("no elision marker in %q", got)
			}
			head, tail := got[:i], got[j+len(" bytes of output omitted …]\n"):]
			var omitted int
			if _, err := fmt.Sscanf(got[i+len("\n[… "):j], "%d", &omitted); err != nil {
				t.Fatal(err)
			}
			if len(head)+omitted+len(tail) != len(tt.in) {
				t.Errorf("head %d + omitted %d + tail %d != %d", len(head), omitted, len(tail), len(tt.in))
			}
			if !strings.HasPrefix(tt.in, head) || !strings.HasSuffix(tt.in, tail) {
				t.Error("head or tail is not from the input")
			}
		})
	}
	if got := capText("short", 100); got != "short" {
		t.Errorf("capText changed short text: %q", got)
	}
}

func TestHeadTailMatchesCapText(t *testing.T) {
	var all strings.Builder
	w := newHeadTail(1000)
	for i := range 5000 {
		line := fmt.Sprintf("line %d é\n", i)
		all.WriteString(line)
		if _, err := w.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := w.String(1000), capText(all.String(), 1000); got != want {
		t.Errorf("streamed capture differs from capping the whole text:\n%q\n%q", got, want)
	}
	small := newHeadTail(1000)
	_, _ = small.Write([]byte("abc"))
	_, _ = small.Write([]byte("def"))
	if got := small.String(1000); got != "abcdef" {
		t.Errorf("short capture = %q", got)
	}
}
