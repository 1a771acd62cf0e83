package anthropic

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/talaria-agent/talaria/internal/testing/wiretest"
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
			var tcs toolCaches
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
				got, key, err := encodeIncremental(req, 4096, tc.budget, &tcs)
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

// TestToolListEncodedOnce: a provider validates and encodes its tool list
// once while it does not change (the same bytes, no allocation on later
// calls), with and without the prompt-cache mark on the last tool, and the
// body with the cached list is the full encoder's, also after the list
// changes.
func TestToolListEncodedOnce(t *testing.T) {
	tools := func(desc string) []llm.ToolSpec {
		return []llm.ToolSpec{
			{Name: "read_file", Description: desc, Parameters: []byte(`{"type": "object",
				"properties": {"path": {"type": "string"}}}`)},
			{Name: "noop"},
		}
	}
	var tcs toolCaches
	var cache llm.WireCache
	for _, mark := range []bool{false, true} {
		first, err := tcs.encoded(tools("Reads <a> file."), mark, "")
		if err != nil {
			t.Fatal(err)
		}
		again, _ := tcs.encoded(tools("Reads <a> file."), mark, "")
		if &again[0] != &first[0] {
			t.Fatalf("mark %v: the unchanged list was encoded again", mark)
		}
		if n := testing.AllocsPerRun(50, func() { _, _ = tcs.encoded(tools("Reads <a> file."), mark, "") }); n > 2 {
			// tools(...) itself allocates its slice and schema.
			t.Errorf("mark %v: a cached list costs %v allocations", mark, n)
		}
		if got := bytes.Count(first, []byte(`"cache_control"`)); got != map[bool]int{false: 0, true: 1}[mark] {
			t.Errorf("mark %v: %d cache marks in %s", mark, got, first)
		}
		for call, desc := range []string{"Reads <a> file.", "Reads <a> file.", "Reads a file.", "Reads a file."} {
			msgs := []llm.Message{incMessage(0), incMessage(1), incMessage(2), incMessage(3), incMessage(4), incMessage(6), incMessage(7)}
			req := &llm.Request{Model: "claude", System: "s", Messages: msgs, Tools: tools(desc), PromptCache: mark, Stable: len(msgs) - 1, Wire: &cache}
			want, err := buildRequestBody(req, 4096, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, key, err := encodeIncremental(req, 4096, 0, &tcs)
			if err != nil {
				t.Fatal(err)
			}
			cache.Release(key, got)
			enc, _ := tcs.encoded(req.Tools, mark, "")
			if !bytes.Equal(got, want) || !bytes.Contains(got, enc) {
				t.Fatalf("mark %v, call %d: bytes differ\n got  %s\n want %s", mark, call, got, want)
			}
		}
	}
	if _, err := tcs.encoded([]llm.ToolSpec{{Name: "x", Parameters: []byte("{")}}, false, ""); err == nil {
		t.Fatal("an invalid schema was accepted")
	}
}
