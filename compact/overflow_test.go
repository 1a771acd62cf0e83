package compact

import "testing"

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

func TestThresholdOr(t *testing.T) {
	global := Threshold{Ratio: 0.5}
	tests := []struct {
		name   string
		own    Threshold
		window int
		want   int
	}{
		{"no own threshold: the global one", Threshold{}, 100_000, 50_000},
		{"own ratio", Threshold{Ratio: 0.8}, 100_000, 80_000},
		{"own tokens", Threshold{Tokens: 30_000}, 100_000, 30_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.own.Or(global).Limit(tt.window); got != tt.want {
				t.Fatalf("Limit = %d, want %d", got, tt.want)
			}
		})
	}
	c := NewCatalogue(map[string]ModelInfo{"gpt-4o": {Threshold: Threshold{Ratio: 0.7}}})
	if m := c.Lookup("gpt-4o"); m.Threshold.Ratio != 0.7 || m.Window != 128000 {
		t.Fatalf("override kept %+v", m)
	}
}
