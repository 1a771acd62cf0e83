package openai

import (
	"fmt"
	"slices"
	"testing"

	"github.com/talaria-agent/talaria/internal/testing/wiretest"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/toolcache"
)

// sessionMessage is message i of a long session with every kind of
// content the encoder handles: tool calls (empty and odd arguments),
// results, images, reasoning, markup and non-ASCII text.
func sessionMessage(i int) llm.Message {
	switch i % 6 {
	case 0:
		m := llm.NewText(llm.RoleUser, fmt.Sprintf("step %d: fix <b>&</b> \"quoted\" ünïcödé \u2028", i))
		if i%12 == 0 {
			m.Content = append(m.Content, llm.Part{Type: llm.PartImage, MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G', byte(i)}})
		}
		return m
	case 1:
		m := llm.NewText(llm.RoleAssistant, "")
		m.ToolCalls = []llm.ToolCall{{ID: fmt.Sprint("c", i), Name: "read_file", Arguments: fmt.Sprintf(`{"path":"f%d.go"}`, i)},
			{ID: fmt.Sprint("d", i), Name: "noop", Arguments: ""}}
		m.Reasoning = &llm.Reasoning{Text: "think", Signature: "sig", API: "anthropic"}
		return m
	case 2:
		return llm.NewToolResult(llm.ToolCall{ID: fmt.Sprint("c", i-1), Name: "read_file"}, "package x\n\nfunc <T>() {}\n", false)
	case 3:
		return llm.NewToolResult(llm.ToolCall{ID: fmt.Sprint("d", i-2), Name: "noop"}, "failed", true)
	case 4:
		return llm.NewText(llm.RoleAssistant, fmt.Sprintf("done %d", i))
	default:
		return llm.Message{Role: llm.RoleUser, Content: []llm.Part{{Type: llm.PartImage, URL: "https://example.com/a.png"}, llm.TextPart("see")}}
	}
}

// TestIncrementalBytesMatchFullEncoding runs a session call by call, rows
// appended between calls and the newest messages changing (as repair's
// synthetic results are replaced by real ones), and checks that every
// body is byte for byte the full encoder's.
func TestIncrementalBytesMatchFullEncoding(t *testing.T) {
	for _, system := range []string{"", "You are <careful>."} {
		t.Run(fmt.Sprintf("system=%t", system != ""), func(t *testing.T) {
			var cache llm.WireCache
			calls := wiretest.Calls{Cache: &cache}
			var tc toolcache.Cache
			var msgs []llm.Message
			tools := []llm.ToolSpec{{Name: "read_file", Description: "Reads <a> file.", Parameters: []byte(`{"type":"object"}`)}, {Name: "noop"}}
			for call := range 40 {
				stable := len(msgs)
				for range call%4 + 1 {
					msgs = append(msgs, sessionMessage(len(msgs)))
				}
				// The newest message is different on every call: it must
				// never be taken from the cache.
				tail := llm.NewText(llm.RoleUser, fmt.Sprint("pending ", call))
				req := &llm.Request{Model: "m", System: system, Messages: append(msgs[:len(msgs):len(msgs)], tail), Tools: tools,
					MaxTokens: 100, Stable: stable, Wire: &cache}
				switch call % 11 {
				case 4:
					req.Tools = nil // the grace call offers none
				case 7:
					// The registry changed: the cached list must not be sent.
					req.Tools = slices.Clone(tools)
					req.Tools[0].Description = fmt.Sprint("changed ", call)
				case 9:
					req.Tools = append(slices.Clone(tools), llm.ToolSpec{Name: "new", Parameters: []byte(`{ "type" : "object" }`)})
				}
				if call%7 == 3 {
					req.Stable = stable / 2 // a shorter stable prefix than the cache holds
				}
				want, err := encodeRequest(req, call%2 == 0)
				if err != nil {
					t.Fatal(err)
				}
				got, key, err := encodeIncremental(req, call%2 == 0, &tc)
				if err != nil {
					t.Fatal(err)
				}
				calls.Check(t, call, got, want, key)
			}
			if calls.InPlace == 0 {
				t.Error("no call appended in place")
			}
		})
	}
}
