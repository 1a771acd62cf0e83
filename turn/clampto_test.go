package turn

import (
	"testing"
	"time"
)

// clampTo picks the output cap after a provider refused the one asked
// for: the limit it named, else half the ask, else a floor that works
// everywhere.
func TestClampTo(t *testing.T) {
	tests := []struct {
		name         string
		limit, asked int
		want         int
	}{
		{"the named limit", 8192, 32000, 8192},
		{"the named limit even over the ask", 64000, 32000, 64000},
		{"no limit named: half the ask", 0, 32000, 16000},
		{"odd ask rounds down", 0, 4097, 2048},
		{"the smallest ask that halves", 0, 2, 1},
		{"an ask of one", 0, 1, 4096},
		{"nothing asked", 0, 0, 4096},
		{"negative limit is no limit", -1, 1000, 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clampTo(tt.limit, tt.asked); got != tt.want {
				t.Errorf("clampTo(%d, %d) = %d, want %d", tt.limit, tt.asked, got, tt.want)
			}
		})
	}
}

// clipWords quotes at most about n bytes of a provider's message, cut at a
// word, or at a rune boundary when there is no space to cut at.
func TestClipWords(t *testing.T) {
	tests := []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"short enough", "rate limited", 20, "rate limited"},
		{"trimmed first", "  rate limited \n", 12, "rate limited"},
		{"exactly n", "abcdef", 6, "abcdef"},
		{"cut at the last word", "the quick brown fox", 12, "the quick…"},
		{"no space: cut at n", "abcdefghij", 4, "abcd…"},
		{"no space: never inside a rune", "ééééé", 3, "é…"},
		{"space only at the start after trim", "x yyyyyyyy", 5, "x…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clipWords(tt.s, tt.n); got != tt.want {
				t.Errorf("clipWords(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
			}
		})
	}
}

// roundDelay rounds a wait for a status line: whole seconds from a second
// up, milliseconds below, so a short retry-after never reads "0s".
func TestRoundDelay(t *testing.T) {
	tests := []struct {
		d, want time.Duration
	}{
		{0, 0},
		{250400 * time.Microsecond, 250 * time.Millisecond},
		{999 * time.Millisecond, 999 * time.Millisecond},
		{time.Second, time.Second},
		{1400 * time.Millisecond, time.Second},
		{1500 * time.Millisecond, 2 * time.Second},
		{90*time.Second + 200*time.Millisecond, 90 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.d.String(), func(t *testing.T) {
			if got := roundDelay(tt.d); got != tt.want {
				t.Errorf("roundDelay(%v) = %v, want %v", tt.d, got, tt.want)
			}
		})
	}
}
