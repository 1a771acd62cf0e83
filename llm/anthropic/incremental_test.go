package anthropic

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/talaria-agent/talaria/internal/wiretest"
	"github.com/talaria-agent/talaria/llm"
)

// incMessage is message i of a session with what changes the Messages
// body's shape: tool loops (results merging into user turns), signed and
// foreign thinking, system messages (they join the top-level system),
// user messages with no content (no wire turn), images, markup.
func incMessage(i int) llm.Message {
	switch i % 9 {
	case 0:
		return llm.NewText(llm.RoleUser, fmt.Sprintf("step %d: fix <b>&</b> \"quoted\" ünïcödé", i))
	case 1:
		m := llm.NewText(llm.RoleAssistant, "")
		m.ToolCalls = []llm.ToolCall{{ID: fmt.Sprint("c", i), Name: "read_file", Arguments: fmt.Sprintf(`{"path":"f%d.go"}`, i)}}
		if i%2 == 1 {
			m.Reasoning = &llm.Reasoning{Text: "think", Signature: fmt.Sprint("sig", i), API: "anthropic"}
		}
		return m
	case 2:
		return llm.NewToolResult(llm.ToolCall{ID: fmt.Sprint("c", i-1), Name: "read_file"}, "package x\n\nfunc <T>() {}\n", i%4 == 0)
	case 3:
		m := llm.NewText(llm.RoleAssistant, fmt.Sprintf("done %d", i))
		m.ToolCalls = []llm.ToolCall{{ID: fmt.Sprint("d", i), Name: "noop"}}
		m.Reasoning = &llm.Reasoning{Items: nil, API: "openai-responses"}
		return m
	case 4:
		return llm.NewToolResult(llm.ToolCall{ID: fmt.Sprint("d", i-1), Name: "noop"}, "ok", false)
	case 5:
		if i%4 == 1 {
			return llm.NewText(llm.RoleUser, "") // no content: no wire turn
		}
		return llm.Message{Role: llm.RoleUser, Content: []llm.Part{{Type: llm.PartImage, MediaType: "image/png", Data: []byte{0x89, 'P', byte(i)}}, llm.TextPart("see")}}
	case 6:
		return llm.NewText(llm.RoleAssistant, fmt.Sprintf("answer %d", i))
	case 7:
		if i%5 == 2 {
			return llm.NewText(llm.RoleSystem, fmt.Sprintf("note %d", i))
		}
		return llm.NewText(llm.RoleUser, fmt.Sprint("and ", i))
	default:
		return llm.NewText(llm.RoleAssistant, "") // nothing to send: dropped
	}
}

// TestIncrementalBytesMatchFullEncoding runs sessions call by call, rows
// appended between calls (one message at a time, so the cut lands on every
// kind of boundary), the newest message different on every call, with
// prompt-cache marks and thinking on and off: every body must be
// buildRequestBody's, and the cache must be used.
func TestIncrementalBytesMatchFullEncoding(t *testing.T) {
	tools := []llm.ToolSpec{{Name: "read_file", Description: "Reads <a> file.", Parameters: []byte(`{"type":"object"}`)}, {Name: "noop"}}
	for _, tc := range []struct {
		name   string
		cache  bool
		budget int
		system string
		tools  []llm.ToolSpec
	}{
		{"plain", false, 0, "", nil},
		{"cache", true, 0, "You are <careful>.", tools},
		{"cache-no-tools", true, 0, "", nil},
		{"thinking", true, 2048, "sys", tools},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cache llm.WireCache
			calls := wiretest.Calls{Cache: &cache}
			var msgs []llm.Message
			reused := 0
			rnd := rand.New(rand.NewPCG(1, 2)) // any run of appends, the same every time
			for call := range 300 {
				stable := len(msgs)
				for range rnd.IntN(4) {
					msgs = append(msgs, incMessage(len(msgs)))
				}
				tail := llm.NewText(llm.RoleUser, fmt.Sprint("pending ", call))
				switch rnd.IntN(4) {
				case 1:
					tail = llm.NewToolResult(llm.ToolCall{ID: "x", Name: "noop"}, fmt.Sprint("late ", call), false)
				case 2:
					tail = llm.NewText(llm.RoleAssistant, fmt.Sprint("partial ", call))
				}
				req := &llm.Request{Model: "claude", System: tc.system, Messages: append(msgs[:len(msgs):len(msgs)], tail),
					Tools: tc.tools, PromptCache: tc.cache, Stable: stable, Wire: &cache}
				if call%7 == 3 {
					req.Stable = stable / 2
				}
				want, err := buildRequestBody(req, 4096, tc.budget)
				if err != nil {
					t.Fatal(err)
				}
				got, key, err := encodeIncremental(req, 4096, tc.budget)
				if err != nil {
					t.Fatal(err)
				}
				calls.Check(t, call, got, want, key)
				if key != "" {
					reused++
				}
			}
			if calls.InPlace == 0 || reused < 200 {
				t.Errorf("cache used on %d calls, in place on %d", reused, calls.InPlace)
			}
		})
	}
}
