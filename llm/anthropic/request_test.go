package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// pngHeader is enough bytes for content sniffing to say image/png.
var pngHeader = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

// conversation exercises every mapping rule: system, tools, an image, a
// signed thinking block, text + two tool calls (one with invalid argument
// JSON), two grouped tool results (one an error), a user text right after
// the tool results, redacted thinking and a URL image.
func conversation() *llm.Request {
	temp := 0.2
	return &llm.Request{
		Model:       "claude-sonnet-4-5",
		System:      "You are Talaria, a careful coding agent.",
		MaxTokens:   1024,
		Temperature: &temp,
		Tools: []llm.ToolSpec{
			{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}`)},
			{Name: "shell", Description: "Run a <shell> command & wait.", Parameters: json.RawMessage(`{"type":"object","properties":{"cmd":{"type":"string"}}}`)},
		},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Part{
				llm.TextPart("Read a.txt, then run ls. Screenshot attached."),
				{Type: llm.PartImage, MediaType: "image/png", Data: pngHeader},
			}},
			{
				Role:      llm.RoleAssistant,
				Reasoning: &llm.Reasoning{Text: "Two tools are needed.", Signature: "sig-AAA"},
				Content:   []llm.Part{llm.TextPart("Reading and listing.")},
				ToolCalls: []llm.ToolCall{
					{ID: "toolu_01", Name: "read_file", Arguments: `{"path": "a.txt"}`},
					{ID: "toolu_02", Name: "shell", Arguments: `{"cmd": "ls`},
				},
			},
			llm.NewToolResult(llm.ToolCall{ID: "toolu_01", Name: "read_file"}, "hello from a.txt", false),
			llm.NewToolResult(llm.ToolCall{ID: "toolu_02", Name: "shell"}, "invalid arguments: unexpected end of JSON", true),
			llm.NewText(llm.RoleUser, "Also check b.txt."),
			{
				Role:      llm.RoleAssistant,
				Reasoning: &llm.Reasoning{Redacted: "opaque-redacted-data"},
				Content:   []llm.Part{llm.TextPart("Done: a.txt says hello.")},
			},
			{Role: llm.RoleUser, Content: []llm.Part{
				llm.TextPart("What is in this picture?"),
				{Type: llm.PartImage, URL: "https://example.com/cat.jpg"},
			}},
		},
		PromptCache: true,
	}
}

// sentBody sends req to a fake endpoint and returns the exact request body.
func sentBody(t *testing.T, req *llm.Request) []byte {
	t.Helper()
	api := newFakeAPI(t, streamOf(textStream()...))
	if _, _, err := run(t, api.provider(), t.Context(), req); err != nil {
		t.Fatal(err)
	}
	return api.body(0)
}

func TestRequestGolden(t *testing.T) {
	body := sentBody(t, conversation())
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, body, "", "  "); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, body)
	}
	pretty.WriteByte('\n')
	path := filepath.Join("testdata", "conversation_request.json")
	if *update {
		if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Errorf("request body differs from %s (run with -update after checking):\n%s", path, pretty.Bytes())
	}
}

func TestRequestBytesStable(t *testing.T) {
	first := sentBody(t, conversation())
	second := sentBody(t, conversation())
	if !bytes.Equal(first, second) {
		t.Errorf("two sends of the same request differ:\n%s\n%s", first, second)
	}
	direct, err := buildRequestBody(conversation(), defaultMaxTokens, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, direct) {
		t.Errorf("bytes on the wire differ from the built body:\n%s\n%s", first, direct)
	}
}

// cacheMarks lists the JSON paths that carry cache_control.
func cacheMarks(t *testing.T, body []byte) []string {
	t.Helper()
	var req struct {
		System   []map[string]any `json:"system"`
		Tools    []map[string]any `json:"tools"`
		Messages []struct {
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	var marks []string
	check := func(path string, m map[string]any) {
		if cc, ok := m["cache_control"]; ok {
			if got, _ := json.Marshal(cc); string(got) != `{"type":"ephemeral"}` {
				t.Errorf("%s cache_control = %s", path, got)
			}
			marks = append(marks, path)
		}
	}
	for i, b := range req.Tools {
		check("tools."+itoa(i), b)
	}
	for i, b := range req.System {
		check("system."+itoa(i), b)
	}
	for i, m := range req.Messages {
		for j, b := range m.Content {
			check("messages."+itoa(i)+".content."+itoa(j), b)
		}
	}
	return marks
}

func TestRequestCacheControlPlacement(t *testing.T) {
	userTurns := func(n int) []llm.Message {
		var msgs []llm.Message
		for i := range n {
			if i > 0 {
				msgs = append(msgs, llm.NewText(llm.RoleAssistant, "ok "+itoa(i)))
			}
			msgs = append(msgs, llm.NewText(llm.RoleUser, "question "+itoa(i)))
		}
		return msgs
	}
	tool := []llm.ToolSpec{{Name: "a", Parameters: json.RawMessage(`{"type":"object"}`)}, {Name: "b", Parameters: json.RawMessage(`{"type":"object"}`)}}
	tests := []struct {
		name string
		req  *llm.Request
		want []string
	}{
		{
			name: "off",
			req:  &llm.Request{Model: "m", System: "s", Tools: tool, Messages: userTurns(3)},
			want: nil,
		},
		{
			name: "tools system and last two user turns",
			req:  &llm.Request{Model: "m", System: "s", Tools: tool, Messages: userTurns(3), PromptCache: true},
			want: []string{"tools.1", "system.0", "messages.2.content.0", "messages.4.content.0"},
		},
		{
			name: "no tools no system",
			req:  &llm.Request{Model: "m", Messages: userTurns(3), PromptCache: true},
			want: []string{"messages.2.content.0", "messages.4.content.0"},
		},
		{
			name: "single user turn",
			req:  &llm.Request{Model: "m", System: "s", Messages: userTurns(1), PromptCache: true},
			want: []string{"system.0", "messages.0.content.0"},
		},
		{
			name: "full conversation marks the last block of grouped turns",
			req:  conversation(),
			want: []string{"tools.1", "system.0", "messages.2.content.2", "messages.4.content.1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := buildRequestBody(tt.req, defaultMaxTokens, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := cacheMarks(t, body)
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("cache marks = %v, want %v", got, tt.want)
			}
			if len(got) > maxBreakpoints {
				t.Errorf("%d breakpoints, the API allows %d", len(got), maxBreakpoints)
			}
		})
	}
}

func TestRequestMapping(t *testing.T) {
	tests := []struct {
		name string
		req  *llm.Request
		// want is the exact JSON of messages (or of the field named in key).
		key  string
		want string
	}{
		{
			name: "no tools omits tools",
			req:  simpleRequest(),
			key:  "tools",
			want: ``,
		},
		{
			name: "default max_tokens",
			req:  simpleRequest(),
			key:  "max_tokens",
			want: `8192`,
		},
		{
			name: "tool without schema gets an empty object schema",
			req:  &llm.Request{Model: "m", Tools: []llm.ToolSpec{{Name: "now"}}, Messages: simpleRequest().Messages},
			key:  "tools",
			want: `[{"name":"now","input_schema":{"type":"object","properties":{}}}]`,
		},
		{
			name: "system-role messages join the system blocks",
			req: &llm.Request{Model: "m", System: "base", Messages: []llm.Message{
				llm.NewText(llm.RoleSystem, "extra rule"), llm.NewText(llm.RoleUser, "hi"),
			}},
			key:  "system",
			want: `[{"type":"text","text":"base"},{"type":"text","text":"extra rule"}]`,
		},
		{
			name: "tool results open the user turn even after a steer",
			req: &llm.Request{Model: "m", Messages: []llm.Message{
				llm.NewText(llm.RoleUser, "go"),
				{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "t1", Name: "a"}, {ID: "t2", Name: "b", Arguments: "[1]"}}},
				llm.NewToolResult(llm.ToolCall{ID: "t1"}, "r1", false),
				llm.NewText(llm.RoleUser, "steer"),
				llm.NewToolResult(llm.ToolCall{ID: "t2"}, "", false),
			}},
			key: "messages",
			want: `[{"role":"user","content":[{"type":"text","text":"go"}]},` +
				`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"a","input":{}},{"type":"tool_use","id":"t2","name":"b","input":{}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"r1"},{"type":"tool_result","tool_use_id":"t2"},{"type":"text","text":"steer"}]}]`,
		},
		{
			name: "empty messages and unsigned thinking are dropped",
			req: &llm.Request{Model: "m", Messages: []llm.Message{
				llm.NewText(llm.RoleUser, "q"),
				{Role: llm.RoleAssistant, Reasoning: &llm.Reasoning{Text: "from another provider"}},
				{Role: llm.RoleUser, Content: []llm.Part{llm.TextPart(""), {Type: llm.PartImage}}},
				{Role: llm.RoleAssistant, Reasoning: &llm.Reasoning{Text: "unsigned"}, Content: []llm.Part{llm.TextPart("a")}},
			}},
			key:  "messages",
			want: `[{"role":"user","content":[{"type":"text","text":"q"}]},{"role":"assistant","content":[{"type":"text","text":"a"}]}]`,
		},
		{
			name: "tool result with an image sends content blocks",
			req: &llm.Request{Model: "m", Messages: []llm.Message{
				{Role: llm.RoleTool, ToolCallID: "t1", Content: []llm.Part{llm.TextPart("shot:"), {Type: llm.PartImage, Data: pngHeader}}},
			}},
			key:  "messages",
			want: `[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"shot:"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgoAAAANSUhEUg=="}}]}]}]`,
		},
		{
			name: "invalid UTF-8 is replaced, markup is not escaped",
			req:  &llm.Request{Model: "m", Messages: []llm.Message{llm.NewText(llm.RoleUser, "a<b>&\xffc")}},
			key:  "messages",
			want: `[{"role":"user","content":[{"type":"text","text":"a<b>&\ufffdc"}]}]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := buildRequestBody(tt.req, defaultMaxTokens, 0)
			if err != nil {
				t.Fatal(err)
			}
			var top map[string]json.RawMessage
			if err := json.Unmarshal(body, &top); err != nil {
				t.Fatal(err)
			}
			if got := string(top[tt.key]); got != tt.want {
				t.Errorf("%s =\n%s\nwant\n%s", tt.key, got, tt.want)
			}
		})
	}
}

func TestRequestInvalid(t *testing.T) {
	tests := []struct {
		name string
		req  *llm.Request
	}{
		{"nil request", nil},
		{"tool schema not JSON", &llm.Request{Model: "m", Tools: []llm.ToolSpec{{Name: "x", Parameters: json.RawMessage(`{"type":`)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, streamOf(textStream()...))
			_, _, err := run(t, api.provider(), t.Context(), tt.req)
			ae := mustAPIError(t, err)
			if !errors.Is(err, ErrInvalidRequest) {
				t.Errorf("error %v does not match ErrInvalidRequest", err)
			}
			if ae.StatusCode != 0 || ae.Transport != llm.TransportNone {
				t.Errorf("status/transport = %d/%q", ae.StatusCode, ae.Transport)
			}
			if got := api.calls.Load(); got != 0 {
				t.Errorf("HTTP requests = %d, want 0", got)
			}
		})
	}
}
