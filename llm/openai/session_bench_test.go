package openai

import (
	"testing"

	"github.com/talaria-agent/talaria/bench/benchscript"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/toolcache"
)

// BenchmarkCallBySessionSize is the per-call request work of a session of
// 1k, 10k and 50k stored messages that grows by one exchange (4 rows) per
// call: projection, repair, cleaning and encoding of the Chat Completions
// body. "full" is the path before the wire cache (the whole history every
// call), "incremental" the engine's path now. The growth of ns/op between
// sizes divided by the messages added is a call's cost per stored message.
func BenchmarkCallBySessionSize(b *testing.B) {
	var tc toolcache.Cache
	benchscript.CallBySessionSize(b,
		func(req *llm.Request) ([]byte, error) { return encodeRequest(req, false) },
		func(req *llm.Request) ([]byte, string, error) { return encodeIncremental(req, false, &tc) })
}

// BenchmarkResponsesCallBySessionSize is BenchmarkCallBySessionSize for
// the Responses body (reasoning replay on, as by default).
func BenchmarkResponsesCallBySessionSize(b *testing.B) {
	var tc toolcache.Cache
	o := responsesOptions{replay: true}
	benchscript.CallBySessionSize(b,
		func(req *llm.Request) ([]byte, error) { return encodeResponsesRequest(req, o) },
		func(req *llm.Request) ([]byte, string, error) { return encodeResponsesIncremental(req, o, &tc) })
}
