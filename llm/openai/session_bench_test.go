package openai

import (
	"fmt"
	"testing"

	"github.com/talaria-agent/talaria/bench/benchscript"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/transcript"
)

// benchRow is row i of a long tool-using session.
func benchRow(i int) store.Message {
	return store.Message{ID: int64(i + 1), Seq: int64(i + 1), Message: benchscript.SessionMessage(i)}
}

// BenchmarkCallBySessionSize is the per-call request work of a session of
// 1k, 10k and 50k stored messages that grows by one exchange (4 rows) per
// call: projection, repair, cleaning and encoding of the Chat Completions
// body. "full" is the path before the wire cache (the whole history every
// call), "incremental" the engine's path now. The growth of ns/op between
// sizes divided by the messages added is a call's cost per stored message.
func BenchmarkCallBySessionSize(b *testing.B) {
	var tc toolCache
	benchCallBySessionSize(b,
		func(req *llm.Request) ([]byte, error) { return encodeRequest(req, false) },
		func(req *llm.Request) ([]byte, string, error) { return encodeIncremental(req, false, &tc) })
}

// BenchmarkResponsesCallBySessionSize is BenchmarkCallBySessionSize for
// the Responses body (reasoning replay on, as by default).
func BenchmarkResponsesCallBySessionSize(b *testing.B) {
	var tc toolCache
	o := responsesOptions{replay: true}
	benchCallBySessionSize(b,
		func(req *llm.Request) ([]byte, error) { return encodeResponsesRequest(req, o) },
		func(req *llm.Request) ([]byte, string, error) { return encodeResponsesIncremental(req, o, &tc) })
}

func benchCallBySessionSize(b *testing.B, full func(*llm.Request) ([]byte, error), incremental func(*llm.Request) ([]byte, string, error)) {
	tools := []llm.ToolSpec{{Name: "read_file", Description: "Read a file.", Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}
	for _, size := range []int{1000, 10_000, 50_000} {
		for _, mode := range []string{"full", "incremental"} {
			b.Run(fmt.Sprintf("%s/%d", mode, size), func(b *testing.B) {
				rows := make([]store.Message, size, size+4*b.N+8)
				for i := range rows {
					rows[i] = benchRow(i)
				}
				var proj transcript.Projector
				var wire llm.WireCache
				call := func() int {
					req := &llm.Request{Model: "gpt-4.1", System: "You are careful.", Tools: tools}
					if mode == "full" {
						req.Messages, _ = transcript.Project(rows)
						transcript.CleanRequest(req)
						body, err := full(req)
						if err != nil {
							b.Fatal(err)
						}
						return len(body)
					}
					req.Messages, req.Stable, _ = proj.Project(rows)
					req.Wire = &wire
					transcript.CleanRequestFrom(req, req.Stable)
					body, key, err := incremental(req)
					if err != nil {
						b.Fatal(err)
					}
					wire.Release(key, body) // as after a request sent whole
					return len(body)
				}
				call() // the session's first call encodes everything
				b.ReportAllocs()
				b.ResetTimer()
				n := 0
				for range b.N {
					for range 4 {
						rows = append(rows, benchRow(len(rows)))
					}
					n = call()
				}
				b.ReportMetric(float64(n), "body-bytes")
			})
		}
	}
}
