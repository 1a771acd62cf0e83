package turn_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkRoundTripSessionSize is BenchmarkRoundTripLongSession at 1k,
// 10k and 50k stored messages (TALARIA_BENCH_SIZES overrides, comma
// separated): each of the turn's 11 calls carries the whole history, so
// the growth of cpu-ns/roundtrip between sizes, divided by the messages
// added, is a call's CPU per stored message. Run it against an external
// server (TALARIA_BENCH_URL), or the in-process server's decoding of
// every request is counted too.
func BenchmarkRoundTripSessionSize(b *testing.B) {
	sizes := []int{1000, 10_000, 50_000}
	if s := os.Getenv("TALARIA_BENCH_SIZES"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatalf("TALARIA_BENCH_SIZES: %v", err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, api := range []string{"openai"} {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%s/%d", api, n), func(b *testing.B) { benchTurns(b, api, n, "", nil) })
		}
	}
}
