package benchscript

import (
	"fmt"
	"testing"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/transcript"
)

// CallBySessionSize runs the per-call benchmark of an adapter: sessions of
// 1k, 10k and 50k stored messages (SessionMessage) growing by one exchange
// (4 rows) per call, each call projecting, repairing, cleaning and encoding
// the request. "full" is full (the whole history every call),
// "incremental" the engine's path (Projector, wire cache, incremental);
// "first" is a resumed process's first call (a fresh Projector and wire
// cache each op, the session not growing), the encode half of the time
// `talaria run -c` takes to its first request.
// The growth of ns/op between sizes divided by the messages added is a
// call's cost per stored message.
func CallBySessionSize(b *testing.B, full func(*llm.Request) ([]byte, error), incremental func(*llm.Request) ([]byte, string, error)) {
	tools := []llm.ToolSpec{{Name: "read_file", Description: "Read a file.", Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}
	for _, size := range []int{1000, 10_000, 50_000} {
		for _, mode := range []string{"full", "incremental", "first"} {
			b.Run(fmt.Sprintf("%s/%d", mode, size), func(b *testing.B) {
				rows := make([]store.Message, size, size+4*b.N+8)
				for i := range rows {
					rows[i] = sessionRow(i)
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
				if mode == "first" {
					b.ReportAllocs()
					n := 0
					for b.Loop() {
						proj, wire = transcript.Projector{}, llm.WireCache{}
						n = call()
					}
					b.ReportMetric(float64(n), "body-bytes")
					return
				}
				call() // the session's first call encodes everything
				b.ReportAllocs()
				b.ResetTimer()
				n := 0
				for range b.N {
					for range 4 {
						rows = append(rows, sessionRow(len(rows)))
					}
					n = call()
				}
				b.ReportMetric(float64(n), "body-bytes")
			})
		}
	}
}

// sessionRow is stored row i of a long session.
func sessionRow(i int) store.Message {
	return store.Message{ID: int64(i + 1), Seq: int64(i + 1), Message: SessionMessage(i)}
}
