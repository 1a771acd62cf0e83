package anthropic

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/testing/wiretest"
)

// appendCases are wire messages built from a few strings so the fuzzer
// reaches every branch: each block kind, omitted fields, cache marks,
// nil and empty content, raw input with spaces.
func appendCases(a, b, c string, n uint8) []*wireMessage {
	mark := func(bl block) block {
		if n%2 == 1 {
			ttl := ""
			if n%4 == 3 {
				ttl = TTL1h // the 1-hour tier's "ttl" member
			}
			bl.markCache(ttl)
		}
		return bl
	}
	var resultContent any
	switch n % 4 {
	case 0:
		resultContent = a
	case 1:
		resultContent = []block{newText(b), &imageBlock{Type: "image", Source: imageSource{Type: "url", URL: c}}}
	case 2:
		resultContent = ""
	}
	input := json.RawMessage(`{ "path" : "` + strings.Repeat("x", int(n%5)) + `", "n": [1, 2] }`)
	if n%3 == 0 {
		input = nil
	}
	var content []block
	if n%5 != 0 {
		content = []block{}
	}
	return []*wireMessage{
		{Role: a, Content: []block{mark(newText(b)), &textBlock{Type: "text", Text: c}}},
		{Role: "user", Content: []block{
			mark(&imageBlock{Type: "image", Source: imageSource{Type: "base64", MediaType: a, Data: b}}),
			&imageBlock{Type: "image", Source: imageSource{Type: "url", URL: c}},
		}},
		{Role: "assistant", Content: []block{
			&thinkingBlock{Type: "thinking", Thinking: a, Signature: b},
			mark(&redactedThinkingBlock{Type: "redacted_thinking", Data: c}),
			mark(&toolUseBlock{Type: "tool_use", ID: a, Name: b, Input: input}),
		}},
		{Role: "user", Content: []block{
			mark(&toolResultBlock{Type: "tool_result", ToolUseID: c, Content: resultContent, IsError: n%3 == 1}),
			&toolResultBlock{Type: "tool_result", ToolUseID: a},
		}},
		{Role: "user", Content: content},
		{Role: "user", Content: []block{(*textBlock)(nil)}},
	}
}

func checkAppendMessage(t *testing.T, m *wireMessage) {
	t.Helper()
	want, err := encodeWire(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := appendMessage([]byte("prefix"), m)
	if err != nil {
		t.Fatalf("appendMessage: %v", err)
	}
	if string(got) != "prefix"+string(want) {
		t.Fatalf("appendMessage\n got %s\nwant prefix%s", got, want)
	}
}

func TestAppendMessageMatchesEncodingJSON(t *testing.T) {
	strs := []string{"", "plain", "a <b> & \"c\"\n\t\\", "\x00\x1f\x7f\xff", "line\u2028para\u2029", "é✓🎉"}
	for i, a := range strs {
		for n := range uint8(30) {
			for _, m := range appendCases(a, strs[(i+1)%len(strs)], strs[(i+2)%len(strs)], n) {
				checkAppendMessage(t, m)
			}
		}
	}
	checkAppendMessage(t, nil)
	// Invalid raw input is an error both ways.
	bad := &wireMessage{Role: "assistant", Content: []block{&toolUseBlock{Type: "tool_use", Input: json.RawMessage(`{"x":`)}}}
	if _, err := encodeWire(bad); err == nil {
		t.Fatal("encoding/json accepted invalid input")
	}
	if _, err := appendMessage(nil, bad); err == nil {
		t.Fatal("appendMessage accepted invalid input")
	}
}

func FuzzAppendMessage(f *testing.F) {
	f.Add("user", "hello", "call_1", uint8(0))
	f.Add("<&>", "\x00\n\"", "\xff\u2028", uint8(7))
	f.Fuzz(func(t *testing.T, a, b, c string, n uint8) {
		for _, m := range appendCases(a, b, c, n) {
			checkAppendMessage(t, m)
		}
	})
}

// TestAppendersCoverEveryField fails when a wire struct gains or loses a
// JSON field: appendMessage must then be changed with it.
func TestAppendersCoverEveryField(t *testing.T) {
	want := map[reflect.Type][]string{
		reflect.TypeFor[wireMessage]():           {"role", "content"},
		reflect.TypeFor[textBlock]():             {"type", "text", ""},
		reflect.TypeFor[imageBlock]():            {"type", "source", ""},
		reflect.TypeFor[imageSource]():           {"type", "media_type,omitempty", "data,omitempty", "url,omitempty"},
		reflect.TypeFor[toolUseBlock]():          {"type", "id", "name", "input", ""},
		reflect.TypeFor[toolResultBlock]():       {"type", "tool_use_id", "content,omitempty", "is_error,omitempty", ""},
		reflect.TypeFor[thinkingBlock]():         {"type", "thinking", "signature", ""},
		reflect.TypeFor[redactedThinkingBlock](): {"type", "data", ""},
		reflect.TypeFor[cacheMark]():             {"cache_control,omitempty"},
		reflect.TypeFor[cacheControl]():          {"type", "ttl,omitempty"},
	}
	wiretest.CheckJSONFields(t, want)
}
