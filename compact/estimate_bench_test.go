package compact

import (
	"fmt"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

// BenchmarkEstimateTextKinds reports estimation throughput (MB/s) by kind
// of text: the estimator is one table lookup per byte, so it should not
// care much what the bytes are.
func BenchmarkEstimateTextKinds(b *testing.B) {
	code := "func F(xs []int) int {\n\tn := 0\n\tfor i := range xs {\n\t\tn += xs[i]\n\t}\n\treturn n\n}\n"
	for _, k := range []struct{ name, s string }{
		{"prose", prose},
		{"code", code},
		{"json", `{"path":"internal/pkg/file.go","line":42,"ok":true,"tags":["a","b"]} `},
		{"cjk", "日本語のテキストを読みます。"},
	} {
		b.Run(k.name, func(b *testing.B) {
			s := strings.Repeat(k.s, 64<<10/len(k.s))
			b.SetBytes(int64(len(s)))
			n := 0
			for b.Loop() {
				n += EstimateText(s)
			}
			if n == 0 {
				b.Fatal("zero estimate")
			}
		})
	}
}

// benchMessages is a 10,000-message tool session (about 4 MB of text).
func benchMessages() []llm.Message {
	msgs := make([]llm.Message, 0, 10_000)
	result := strings.Repeat("func F(xs []int) int { return len(xs) }\n", 30)
	for i := 0; len(msgs) < 10_000; i++ {
		id := fmt.Sprint("call_", i)
		msgs = append(msgs,
			llm.NewText(llm.RoleUser, fmt.Sprintf("Please fix the loop in internal/pkg%d/file.go.", i)),
			llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: "read_file", Arguments: fmt.Sprintf(`{"path":"internal/pkg%d/file.go"}`, i)}}},
			llm.NewToolResult(llm.ToolCall{ID: id, Name: "read_file"}, result, false),
			llm.NewText(llm.RoleAssistant, "Fixed: the loop now stops at the end of the slice."))
	}
	return msgs
}

// BenchmarkEstimateRequest10k estimates a whole 10,000-message request from
// scratch, what the preflight gate does on a resumed session before any
// provider count exists (messages/s in msgs/s).
func BenchmarkEstimateRequest10k(b *testing.B) {
	r := &llm.Request{Model: "m", System: strings.Repeat("You are careful. ", 100), Messages: benchMessages()}
	var bytes int64
	for _, m := range r.Messages {
		bytes += int64(len(m.Text()))
		for _, c := range m.ToolCalls {
			bytes += int64(len(c.Arguments))
		}
	}
	b.SetBytes(bytes)
	b.ReportAllocs()
	for b.Loop() {
		if EstimateRequest(r) <= 0 {
			b.Fatal("zero estimate")
		}
	}
	b.ReportMetric(float64(len(r.Messages))*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkAccountantIncremental is the preflight estimate in a long
// session once the provider has reported a count: the reported prompt
// tokens of the last call plus estimates of the two messages added since.
// It must not grow with the session.
func BenchmarkAccountantIncremental(b *testing.B) {
	msgs := benchMessages()
	prev := &llm.Request{Model: "m", System: "sys", Messages: msgs[:len(msgs)-2]}
	next := &llm.Request{Model: "m", System: "sys", Messages: msgs}
	var a Accountant
	a.Observe(prev, llm.Usage{InputTokens: 3_000_000, Reported: true})
	b.ReportAllocs()
	for b.Loop() {
		if a.Estimate(next) <= 3_000_000 {
			b.Fatal("the estimate did not extend the reported count")
		}
	}
}
