package anthropic

import (
	"testing"

	"github.com/talaria-agent/talaria/bench/benchscript"
	"github.com/talaria-agent/talaria/llm"
)

// BenchmarkCallBySessionSize is the per-call request work of a long
// session for the Messages body, prompt-cache marks on (see
// benchscript.CallBySessionSize).
func BenchmarkCallBySessionSize(b *testing.B) {
	benchscript.CallBySessionSize(b,
		func(req *llm.Request) ([]byte, error) {
			req.PromptCache = true
			return buildRequestBody(req, 4096, 0)
		},
		func(req *llm.Request) ([]byte, string, error) {
			req.PromptCache = true
			return encodeIncremental(req, 4096, 0)
		})
}
