package openai

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/talaria-agent/talaria/internal/testing/wiretest"
	"github.com/talaria-agent/talaria/llm/internal/wire"
)

// appendCases are the items appendItem writes by hand, built from a few
// strings so the fuzzer reaches every branch (omitted fields, nil and
// empty part lists, strings that need escaping).
func appendCases(a, b, c string, n uint8) []any {
	var content any
	switch n % 4 {
	case 0:
		content = a
	case 1:
		content = nil
	case 2:
		content = []wirePart{{Type: "text", Text: b}, {Type: "image_url", ImageURL: &wireImageURL{URL: c}}, {Type: a}}
	default:
		content = []wirePart(nil)
	}
	var calls []wireToolCall
	for i := range int(n % 3) {
		calls = append(calls, wireToolCall{ID: b + string(rune('0'+i)), Type: "function", Function: wireFunctionCall{Name: c, Arguments: a}})
	}
	var rsContent any = b
	switch n % 3 {
	case 1:
		rsContent = []rsPart{{Type: "output_text", Text: a}, {Type: "input_image", ImageURL: c}, {Type: b}}
	case 2:
		rsContent = []rsPart{}
	}
	return []any{
		wireMessage{Role: a, Content: content, ToolCalls: calls, ToolCallID: c},
		wireMessage{Role: "tool", Content: b},
		wireMessage{Role: "user", Content: []wirePart{}},
		rsMessage{Type: "message", Role: a, Content: rsContent},
		rsMessage{Type: "message", Role: "user", Content: []rsPart(nil)},
		rsFunctionCall{Type: "function_call", CallID: a, Name: b, Arguments: c},
		rsFunctionOutput{Type: "function_call_output", CallID: b, Output: a},
		// Not written by hand: through the encoder.
		json.RawMessage(`{"type": "reasoning", "encrypted_content": "x"}`),
		map[string]any{"type": a},
	}
}

func checkAppendItem(t *testing.T, v any) {
	t.Helper()
	var enc wire.JSONEncoder
	want, err := wire.MarshalJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := appendItem([]byte("prefix"), v, &enc)
	if err != nil {
		t.Fatalf("appendItem(%#v): %v", v, err)
	}
	if string(got) != "prefix"+string(want) {
		t.Fatalf("appendItem(%#v)\n got %s\nwant prefix%s", v, got, want)
	}
}

func TestAppendItemMatchesEncodingJSON(t *testing.T) {
	strs := []string{"", "plain", "a <b> & \"c\"\n\t\\", "\x00\x1f\x7f\xff", "line\u2028para\u2029", "é✓🎉"}
	for i, a := range strs {
		for n := range uint8(12) {
			for _, v := range appendCases(a, strs[(i+1)%len(strs)], strs[(i+2)%len(strs)], n) {
				checkAppendItem(t, v)
			}
		}
	}
	// A content value the appenders do not spell themselves still encodes.
	checkAppendItem(t, wireMessage{Role: "user", Content: map[string]int{"x": 1}})
	checkAppendItem(t, rsMessage{Type: "message", Role: "user", Content: 42})
	var enc wire.JSONEncoder
	if _, err := appendItem(nil, wireMessage{Content: make(chan int)}, &enc); err == nil {
		t.Fatal("a channel in content encoded")
	}
}

func FuzzAppendItem(f *testing.F) {
	f.Add("user", "hello", "call_1", uint8(0))
	f.Add("<&>", "\x00\n\"", "\xff\u2028", uint8(5))
	f.Fuzz(func(t *testing.T, a, b, c string, n uint8) {
		for _, v := range appendCases(a, b, c, n) {
			checkAppendItem(t, v)
		}
	})
}

// TestAppendersCoverEveryField fails when a hand-written type gains or
// loses a JSON field: its appender must then be changed with it.
func TestAppendersCoverEveryField(t *testing.T) {
	want := map[reflect.Type][]string{
		reflect.TypeFor[wireMessage]():      {"role", "content", "tool_calls,omitempty", "tool_call_id,omitempty"},
		reflect.TypeFor[wirePart]():         {"type", "text,omitempty", "image_url,omitempty"},
		reflect.TypeFor[wireImageURL]():     {"url"},
		reflect.TypeFor[wireToolCall]():     {"id", "type", "function"},
		reflect.TypeFor[wireFunctionCall](): {"name", "arguments"},
		reflect.TypeFor[rsMessage]():        {"type", "role", "content"},
		reflect.TypeFor[rsPart]():           {"type", "text,omitempty", "image_url,omitempty"},
		reflect.TypeFor[rsFunctionCall]():   {"type", "call_id", "name", "arguments"},
		reflect.TypeFor[rsFunctionOutput](): {"type", "call_id", "output"},
	}
	wiretest.CheckJSONFields(t, want)
}
