package transcript

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/talaria-agent/talaria/llm"
)

const (
	loneHigh = "\xed\xa0\xbd" // U+D83D encoded on its own (WTF-8)
	loneLow  = "\xed\xb8\x80" // U+DE00
)

func TestCleanText(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"ascii", "hello", "hello"},
		{"multibyte", "héllo wörld 日本 😀", "héllo wörld 日本 😀"},
		{"genuine replacement char kept", "a\uFFFDb", "a\uFFFDb"},
		{"invalid byte", "a\xffb", "a\uFFFDb"},
		{"two invalid bytes", "a\xff\xfeb", "a\uFFFD\uFFFDb"},
		{"truncated sequence at end", "ab\xe6\x97", "ab\uFFFD\uFFFD"},
		{"overlong encoding", "\xc0\xaf", "\uFFFD\uFFFD"},
		{"lone high surrogate", "x" + loneHigh + "y", "x\uFFFDy"},
		{"lone low surrogate", "x" + loneLow + "y", "x\uFFFDy"},
		{"surrogate pair becomes its character", "x" + loneHigh + loneLow + "y", "x😀y"},
		{"low then high is two lone halves", loneLow + loneHigh, "\uFFFD\uFFFD"},
		{"high then high", loneHigh + loneHigh, "\uFFFD\uFFFD"},
		{"surrogate cut short", "\xed\xa0", "\uFFFD\uFFFD"},
		{"lone surrogate at end", "ok" + loneHigh, "ok\uFFFD"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CleanText(tc.in)
			if got != tc.want {
				t.Errorf("CleanText(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("output %q is not valid UTF-8", got)
			}
			if _, err := json.Marshal(got); err != nil {
				t.Errorf("output does not encode: %v", err)
			}
		})
	}
}

func TestCleanTextCleanInputDoesNotAllocate(t *testing.T) {
	s := "a clean string with ünïcödé and 😀, long enough to matter"
	if n := testing.AllocsPerRun(100, func() { _ = CleanText(s) }); n != 0 {
		t.Errorf("CleanText of clean text allocated %v times", n)
	}
}

func TestCleanJSONEscapes(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"no escapes", `{"a":"b"}`, `{"a":"b"}`},
		{"ordinary escape", `{"a":"\u00e9"}`, `{"a":"\u00e9"}`},
		{"valid pair", `{"a":"\ud83d\ude00"}`, `{"a":"\ud83d\ude00"}`},
		{"valid pair upper case", `{"a":"\uD83D\uDE00"}`, `{"a":"\uD83D\uDE00"}`},
		{"lone high", `{"a":"\ud83d"}`, `{"a":"\ufffd"}`},
		{"lone low", `{"a":"x\ude00y"}`, `{"a":"x\ufffdy"}`},
		{"high before a non-surrogate", `"\ud83d\u0041"`, `"\ufffd\u0041"`},
		{"two highs", `"\ud83d\ud83d\ude00"`, `"\ufffd\ud83d\ude00"`},
		{"escaped backslash", `{"re":"\\ud800"}`, `{"re":"\\ud800"}`},
		{"escaped backslash then escape", `"\\\ud800"`, `"\\\ufffd"`},
		{"truncated escape", `"\ud8`, `"\ud8`},
		{"bad hex", `"\uzzzz"`, `"\uzzzz"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := cleanJSONEscapes(tc.in); got != tc.want {
				t.Errorf("cleanJSONEscapes(%s) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestCleanRequest(t *testing.T) {
	bad := "bad" + loneHigh
	// rows and registry stand for slices the request shares with stored rows
	// and with a tool registry: CleanRequest must not write through them.
	rows := []llm.Message{
		user("fine"),
		{Role: llm.RoleUser, Content: []llm.Part{llm.TextPart(bad), image()}},
		{
			Role:      llm.RoleAssistant,
			Content:   []llm.Part{llm.TextPart("ok")},
			ToolCalls: []llm.ToolCall{{ID: "c1", Name: "re\xffad", Arguments: `{"p":"` + bad + `","q":"\ud800"}`}},
			Reasoning: &llm.Reasoning{Text: bad},
		},
		{Role: llm.RoleTool, ToolCallID: "c1", ToolName: "re\xffad", Content: []llm.Part{llm.TextPart("clean result")}},
	}
	registry := []llm.ToolSpec{
		{Name: "read", Description: "reads " + bad, Parameters: json.RawMessage(`{"type":"object"}`)},
		{Name: "grep", Description: "fine", Parameters: json.RawMessage(`{"description":"\udc00"}`)},
	}
	rowsBefore := deepClone(rows)
	registryBefore := []llm.ToolSpec{registry[0], registry[1]}
	req := &llm.Request{System: "sys" + loneLow, Messages: rows, Tools: registry}

	n := CleanRequest(req)

	// system, user part, call name, call args, tool name, reasoning text,
	// tool description, tool parameters.
	if n != 8 {
		t.Errorf("CleanRequest changed %d leaves, want 8", n)
	}
	want := &llm.Request{
		System: "sys\uFFFD",
		Messages: []llm.Message{
			user("fine"),
			{Role: llm.RoleUser, Content: []llm.Part{llm.TextPart("bad\uFFFD"), image()}},
			{
				Role:      llm.RoleAssistant,
				Content:   []llm.Part{llm.TextPart("ok")},
				ToolCalls: []llm.ToolCall{{ID: "c1", Name: "re\uFFFDad", Arguments: `{"p":"bad` + "\uFFFD" + `","q":"\ufffd"}`}},
				Reasoning: &llm.Reasoning{Text: "bad\uFFFD"},
			},
			{Role: llm.RoleTool, ToolCallID: "c1", ToolName: "re\uFFFDad", Content: []llm.Part{llm.TextPart("clean result")}},
		},
		Tools: []llm.ToolSpec{
			{Name: "read", Description: "reads bad\uFFFD", Parameters: json.RawMessage(`{"type":"object"}`)},
			{Name: "grep", Description: "fine", Parameters: json.RawMessage(`{"description":"\ufffd"}`)},
		},
	}
	if !reflect.DeepEqual(req, want) {
		t.Errorf("cleaned request:\n got  %+v\n want %+v", req, want)
	}
	if !reflect.DeepEqual(rows, rowsBefore) {
		t.Error("CleanRequest wrote through to the shared message slice")
	}
	if !reflect.DeepEqual(registry, registryBefore) {
		t.Error("CleanRequest wrote through to the shared tool slice")
	}
	if &req.Messages[0].Content[0] != &rows[0].Content[0] {
		t.Error("an unchanged message's parts were copied")
	}
	if again := CleanRequest(req); again != 0 {
		t.Errorf("second CleanRequest changed %d leaves", again)
	}
}

func TestCleanRequestCleanDoesNotAllocate(t *testing.T) {
	msgs, _ := Project(sessionRows(200))
	req := &llm.Request{System: "system prompt", Messages: msgs, Tools: []llm.ToolSpec{
		{Name: "read", Description: "reads a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
	}}
	if n := testing.AllocsPerRun(20, func() { CleanRequest(req) }); n != 0 {
		t.Errorf("CleanRequest of a clean request allocated %v times", n)
	}
}

// Signed reasoning is provider state covered by a signature: the cleaner
// never touches it, whatever it holds.
func TestCleanRequestSkipsSignedReasoning(t *testing.T) {
	for name, r := range map[string]*llm.Reasoning{
		"signature": {Text: "bad\xff", Signature: "sig"},
		"blocks":    {Text: "bad\xff", Blocks: []llm.ThinkingBlock{{Type: "thinking", Thinking: "bad\xff", Signature: "s"}}},
		"items":     {Text: "bad\xff", Items: []json.RawMessage{json.RawMessage(`{"type":"reasoning"}`)}},
	} {
		t.Run(name, func(t *testing.T) {
			req := &llm.Request{Messages: []llm.Message{{Role: llm.RoleAssistant, Content: []llm.Part{llm.TextPart("ok")}, Reasoning: r}}}
			before := *r
			if n := CleanRequest(req); n != 0 {
				t.Errorf("CleanRequest changed %d leaves, want 0", n)
			}
			if got := req.Messages[0].Reasoning; got != r || got.Text != before.Text {
				t.Errorf("signed reasoning was modified: %+v", got)
			}
		})
	}
}
