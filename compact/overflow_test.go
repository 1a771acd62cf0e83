package compact

import (
	"testing"

	"github.com/talaria-agent/talaria/catalogue"
)

func TestParseOverflow(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		want Overflow
	}{
		{"openai", "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.",
			Overflow{Limit: 128000, Actual: 130512}},
		{"vllm with completion", "This model's maximum context length is 32768 tokens. However, you requested 33000 tokens (32000 in the messages, 1000 in the completion).",
			Overflow{Limit: 32768, Actual: 32000}},
		{"anthropic", "prompt is too long: 210,000 tokens > 200,000 maximum", Overflow{Limit: 200000, Actual: 210000}},
		{"llama.cpp", "request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it",
			Overflow{Limit: 8192, Actual: 9000}},
		{"gemini", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
			Overflow{Limit: 1048576, Actual: 1200000}},
		{"max_model_len", "Input too long for max_model_len 4096", Overflow{Limit: 4096}},
		{"implausible window", "context window of 12 tokens", Overflow{}},
		{"no numbers", "context length exceeded", Overflow{}},
		{"empty", "", Overflow{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseOverflow(tt.msg); got != tt.want {
				t.Fatalf("ParseOverflow(%q) = %+v, want %+v", tt.msg, got, tt.want)
			}
		})
	}
}

func TestThresholdFor(t *testing.T) {
	global := Threshold{Ratio: 0.5}
	tests := []struct {
		name   string
		model  catalogue.Model
		window int
		want   int
	}{
		{"no own threshold: the global one", catalogue.Model{}, 100_000, 50_000},
		{"own ratio", catalogue.Model{CompressionRatio: 0.8}, 100_000, 80_000},
		{"own tokens", catalogue.Model{CompressionTokens: 30_000}, 100_000, 30_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := global.For(tt.model).Limit(tt.window); got != tt.want {
				t.Fatalf("Limit = %d, want %d", got, tt.want)
			}
		})
	}
	c := catalogue.New(map[string]catalogue.Model{"gpt-4o": {CompressionRatio: 0.7}})
	m := c.Lookup("gpt-4o")
	if got := global.For(m).Limit(m.Window); got != 89600 || m.Window != 128000 {
		t.Fatalf("override kept %+v (limit %d)", m, got)
	}
}
