package guard

import (
	"strconv"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

// The guards run on every tool result and every final answer; these show
// what that costs next to a round trip (about a millisecond).

func BenchmarkStreakObserve(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		result := strings.Repeat("x", size)
		b.Run(byteSize(size), func(b *testing.B) {
			s := NewStreak(0)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				s.Observe("read_file", `{"path":"main.go","limit":200}`, result, false)
			}
		})
	}
}

func BenchmarkTrailingIntent(b *testing.B) {
	for _, tc := range []struct{ name, text string }{
		{"short", "I've read the config. Let me now run the tests."},
		{"long", strings.Repeat("The parser now accepts trailing commas. ", 40)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				TrailingIntent(tc.text)
			}
		})
	}
}

func BenchmarkEmptyGuardObserve(b *testing.B) {
	g := NewEmptyGuard(-1, 0)
	a := EmptyAttempt{Provider: "p", Model: "m", Finish: llm.FinishStop, Usage: llm.Usage{InputTokens: 1000, OutputTokens: 1, Reported: true}}
	b.ReportAllocs()
	for b.Loop() {
		if g.Observe(a) == EmptyGiveUp {
			g.Reset()
		}
	}
}

func byteSize(n int) string { return strconv.Itoa(n>>10) + "KiB" }
