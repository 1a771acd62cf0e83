package compact

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/talaria-agent/talaria/llm"
)

const prose = "The quick brown fox jumps over the lazy dog while the agent reads the file and reports back. "

func TestEstimateText(t *testing.T) {
	tests := []struct {
		name     string
		s        string
		min, max int
	}{
		{"empty", "", 0, 0},
		{"one letter", "a", 1, 1},
		{"english prose about 4 bytes a token", strings.Repeat(prose, 10), 920 / 4, 920 / 3},
		{"cjk at least a token a character", strings.Repeat("你好世界", 25), 100, 150},
		{"cyrillic", strings.Repeat("привет ", 20), 20 * 6 / 2, 20 * 7},
		{"emoji two tokens each", strings.Repeat("🙂", 10), 20, 20},
		{"json denser than prose", `{"path":"src/main.go","line":42,"ok":true}`, 14, 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EstimateText(tt.s)
			if got < tt.min || got > tt.max {
				t.Fatalf("EstimateText(%d bytes, %d runes) = %d, want [%d, %d]",
					len(tt.s), utf8.RuneCountInString(tt.s), got, tt.min, tt.max)
			}
		})
	}
}

func TestEstimateTextMonotonic(t *testing.T) {
	s := prose + "naïve café — 日本語のテキスト 🙂 {\"a\":[1,2,3]}\n\tend"
	prev := 0
	for i := 0; i <= len(s); i++ {
		got := EstimateText(s[:i])
		if got < prev {
			t.Fatalf("EstimateText(s[:%d]) = %d < %d for s[:%d]", i, got, prev, i-1)
		}
		prev = got
	}
	if prev <= len(s)/4 {
		t.Fatalf("mixed text estimate %d not above bytes/4 = %d", prev, len(s)/4)
	}
}

func TestEstimateNoAllocations(t *testing.T) {
	s := strings.Repeat(prose, 100)
	tools := []llm.ToolSpec{{Name: "read", Description: "reads", Parameters: json.RawMessage(`{"type":"object"}`)}}
	m := llm.Message{Role: llm.RoleAssistant, Content: []llm.Part{llm.TextPart(s)},
		ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read", Arguments: `{"path":"a"}`}}}
	tests := []struct {
		name string
		f    func()
	}{
		{"text", func() { _ = EstimateText(s) }},
		{"tools", func() { _ = EstimateTools(tools) }},
		{"message", func() { _ = EstimateMessage(m) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(100, tt.f); n != 0 {
				t.Fatalf("allocations per call = %v, want 0", n)
			}
		})
	}
}

func TestEstimateMessage(t *testing.T) {
	text := llm.NewText(llm.RoleAssistant, "Reading the file now.")
	withCall := text
	withCall.ToolCalls = []llm.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"README.md"}`}}
	bigArgs := text
	bigArgs.ToolCalls = []llm.ToolCall{{ID: "call_1", Name: "write_file", Arguments: `{"content":"` + strings.Repeat("x", 4000) + `"}`}}
	image := llm.Message{Role: llm.RoleUser, Content: []llm.Part{llm.TextPart("what is this?"), {Type: llm.PartImage, MediaType: "image/png", Data: make([]byte, 1<<20)}}}
	result := llm.NewToolResult(withCall.ToolCalls[0], "# Title", false)

	tests := []struct {
		name       string
		bigger     llm.Message
		smaller    llm.Message
		atLeastGap int
	}{
		{"tool call adds cost", withCall, text, 8},
		{"large arguments add cost", bigArgs, withCall, 900},
		{"image is a flat cost", image, llm.NewText(llm.RoleUser, "what is this?"), ImageTokens},
		{"tool result counts its reference", result, llm.NewText(llm.RoleTool, "# Title"), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, s := EstimateMessage(tt.bigger), EstimateMessage(tt.smaller)
			if b-s < tt.atLeastGap {
				t.Fatalf("EstimateMessage: %d vs %d, want a gap of at least %d", b, s, tt.atLeastGap)
			}
		})
	}
	t.Run("image cost does not depend on size", func(t *testing.T) {
		small := image
		small.Content = []llm.Part{image.Content[0], {Type: llm.PartImage, Data: make([]byte, 10)}}
		if EstimateMessage(small) != EstimateMessage(image) {
			t.Fatal("image estimate depends on its byte size")
		}
	})
}

func TestEstimateRequest(t *testing.T) {
	msgs := []llm.Message{llm.NewText(llm.RoleUser, "hi"), llm.NewText(llm.RoleAssistant, "hello")}
	tools := []llm.ToolSpec{{Name: "shell", Description: "Run a command", Parameters: json.RawMessage(`{"type":"object","properties":{"cmd":{"type":"string"}}}`)}}
	base := &llm.Request{Messages: msgs}
	tests := []struct {
		name string
		r    *llm.Request
		want int
	}{
		{"nil", nil, 0},
		{"messages only", base, requestOverhead + EstimateMessages(msgs)},
		{"with system", &llm.Request{System: "You are terse.", Messages: msgs}, requestOverhead + EstimateSystem("You are terse.") + EstimateMessages(msgs)},
		{"with tools", &llm.Request{Tools: tools, Messages: msgs}, requestOverhead + EstimateTools(tools) + EstimateMessages(msgs)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EstimateRequest(tt.r); got != tt.want {
				t.Fatalf("EstimateRequest = %d, want %d", got, tt.want)
			}
		})
	}
	if EstimateTools(tools) < EstimateText(string(tools[0].Parameters)) {
		t.Fatal("tool estimate smaller than its schema")
	}
}

// BenchmarkEstimateText reports throughput (MB/s) on mixed text.
func BenchmarkEstimateText(b *testing.B) {
	s := strings.Repeat(prose+`{"path":"internal/x.go","n":12} 日本語 `, 200)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n += EstimateText(s)
	}
	if n == 0 {
		b.Fatal("zero estimate")
	}
}
