package anthropic

import (
	"fmt"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/bench/benchscript"
	"github.com/talaria-agent/talaria/llm"
)

// BenchmarkCallBySessionSize is the per-call request work of a long
// session for the Messages body, prompt-cache marks on (see
// benchscript.CallBySessionSize).
func BenchmarkCallBySessionSize(b *testing.B) {
	var tc toolCaches
	benchscript.CallBySessionSize(b,
		func(req *llm.Request) ([]byte, error) {
			req.PromptCache = true
			return buildRequestBody(req, 4096, 0)
		},
		func(req *llm.Request) ([]byte, string, error) {
			req.PromptCache = true
			return encodeIncremental(req, 4096, 0, &tc)
		})
}

// BenchmarkToolList is the tool list's share of a call with ten tools of
// about 400 bytes of schema each: "per-call" validates, compacts and
// encodes them on every call (as before the provider kept them),
// "cached" is the provider's path.
func BenchmarkToolList(b *testing.B) {
	var tools []llm.ToolSpec
	for i := range 10 {
		tools = append(tools, llm.ToolSpec{Name: fmt.Sprint("tool_", i), Description: strings.Repeat("Does a thing to a file. ", 4),
			Parameters: []byte(`{"type": "object", "properties": {"path": {"type": "string", "description": "File path, relative to the workspace."},
				"offset": {"type": "integer", "minimum": 0}, "limit": {"type": "integer", "minimum": 1, "maximum": 2000},
				"mode": {"type": "string", "enum": ["read", "write", "append"]}}, "required": ["path"], "additionalProperties": false}`)})
	}
	for _, mode := range []string{"per-call", "cached"} {
		b.Run(mode, func(b *testing.B) {
			var tcs *toolCaches
			if mode == "cached" {
				tcs = &toolCaches{}
			}
			b.ReportAllocs()
			for range b.N {
				if _, err := tcs.encoded(tools, true, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
