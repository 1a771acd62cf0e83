package failover

import (
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

// BenchmarkClassify measures one classification of real error shapes: it
// runs once per failed call, so it must stay far below a network round trip.
func BenchmarkClassify(b *testing.B) {
	now := testNow()
	cases := []struct {
		name string
		in   Input
	}{
		{"openai 429", Input{Provider: "openai", Status: 429, Body: []byte(openAIRateLimit), Header: hdr("Retry-After", "20", "x-ratelimit-reset-tokens", "6m0s")}},
		{"anthropic 400 extra usage", Input{Provider: "anthropic", API: "anthropic", Status: 400, Body: []byte(anthExtraUsage)}},
		{"openrouter wrapped cap", Input{Provider: "openrouter", Status: 429, Body: []byte(orWrappedCap)}},
		{"gemini quota retry", Input{Provider: "gemini", Status: 429, Body: []byte(geminiQuotaRetry)}},
		{"transport eof", Input{Provider: "openai", Transport: llm.TransportEOF, Message: "unexpected EOF", MidStream: true}},
	}
	for _, c := range cases {
		c.in.Now = now
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Classify(c.in)
			}
		})
	}
}
