package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

// conversation exercises every mapping rule: system prompt, user text with
// characters JSON likes to escape, assistant text + tool calls (arguments
// with odd spacing, and empty), reasoning that must not be sent, tool
// results (one an error), a multimodal user turn, tools, max_tokens and
// temperature.
func conversation() *llm.Request {
	temp := 0.2
	readCall := llm.ToolCall{ID: "call_a", Name: "read_file", Arguments: `{"path": "a.go",  "lines":[1, 2]}`}
	listCall := llm.ToolCall{ID: "call_b", Name: "list_dir", Arguments: `{"dir":"."}`}
	nowCall := llm.ToolCall{ID: "call_c", Name: "now", Arguments: ""}
	return &llm.Request{
		Model:  "gpt-4o-mini",
		System: "You are terse.\nUse <tools> & be careful.",
		Messages: []llm.Message{
			llm.NewText(llm.RoleUser, `Look at a.go & "list" the dir <now>`),
			{
				Role:      llm.RoleAssistant,
				Content:   []llm.Part{llm.TextPart("Let me look.")},
				ToolCalls: []llm.ToolCall{readCall, listCall},
				Reasoning: &llm.Reasoning{Text: "SECRET-THOUGHTS", Signature: "sig"},
			},
			llm.NewToolResult(readCall, "package main\n", false),
			llm.NewToolResult(listCall, "permission denied", true),
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{nowCall}},
			llm.NewToolResult(nowCall, "12:00", false),
			{Role: llm.RoleAssistant, Content: []llm.Part{llm.TextPart("Done.")}},
			{Role: llm.RoleUser, Content: []llm.Part{
				llm.TextPart("What is in "),
				llm.TextPart("these?"),
				{Type: llm.PartImage, MediaType: "image/png", Data: []byte("\x89PNG\r\n\x1a\nfake")},
				{Type: llm.PartImage, URL: "https://example.com/cat.jpg"},
			}},
		},
		Tools: []llm.ToolSpec{
			{Name: "read_file", Description: "Read a file <path>.", Parameters: json.RawMessage(`{
				"type": "object",
				"properties": {"path": {"type": "string"}, "lines": {"type": "array", "items": {"type": "integer"}}},
				"required": ["path"]
			}`)},
			{Name: "now", Description: "Current time."},
		},
		MaxTokens:   512,
		Temperature: &temp,
		APIKey:      "sk-rotated",
	}
}

func TestRequestGolden(t *testing.T) {
	fs := newFakeServer(t, sse(chunk(`{}`, "stop"), done))
	p := fs.provider(Config{APIKey: "sk-test"})
	for range 2 {
		if _, _, err := collect(t, p.Stream(context.Background(), conversation())); err != nil {
			t.Fatalf("Stream: %v", err)
		}
	}
	reqs := fs.requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d requests, want 2", len(reqs))
	}
	if reqs[0].path != "/v1/chat/completions" {
		t.Errorf("path = %q", reqs[0].path)
	}
	if !bytes.Equal(reqs[0].body, reqs[1].body) {
		t.Errorf("bodies differ between two calls:\n%s\n%s", reqs[0].body, reqs[1].body)
	}
	golden := filepath.Join("testdata", "request_golden.json")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, append(reqs[0].body, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := reqs[0].body; !bytes.Equal(got, bytes.TrimSuffix(want, []byte("\n"))) {
		t.Errorf("request body differs from %s:\ngot  %s\nwant %s", golden, got, want)
	}
	if bytes.Contains(reqs[0].body, []byte("SECRET-THOUGHTS")) {
		t.Error("reasoning text was sent back")
	}
	if !json.Valid(reqs[0].body) {
		t.Error("body is not valid JSON")
	}
}

func TestRequestOptions(t *testing.T) {
	base := func() *llm.Request {
		return &llm.Request{Model: "m", Messages: []llm.Message{llm.NewText(llm.RoleUser, "hi")}}
	}
	zero := 0.0
	tests := []struct {
		name    string
		cfg     Config
		req     func() *llm.Request
		present []string // top-level keys that must be there
		absent  []string // top-level keys that must not
		check   func(t *testing.T, body map[string]json.RawMessage)
	}{
		{
			name:    "no tools omits tools; no cap, no temperature",
			req:     base,
			present: []string{"model", "messages", "stream", "stream_options"},
			absent:  []string{"tools", "max_tokens", "max_completion_tokens", "temperature", "tool_choice"},
			check: func(t *testing.T, body map[string]json.RawMessage) {
				if string(body["stream"]) != "true" || string(body["stream_options"]) != `{"include_usage":true}` {
					t.Errorf("stream = %s, stream_options = %s", body["stream"], body["stream_options"])
				}
			},
		},
		{
			name:    "max_tokens by default",
			req:     func() *llm.Request { r := base(); r.MaxTokens = 100; return r },
			present: []string{"max_tokens"},
			absent:  []string{"max_completion_tokens"},
		},
		{
			name:    "max_completion_tokens when configured",
			cfg:     Config{MaxTokensField: "max_completion_tokens"},
			req:     func() *llm.Request { r := base(); r.MaxTokens = 100; return r },
			present: []string{"max_completion_tokens"},
			absent:  []string{"max_tokens"},
		},
		{
			name:    "temperature zero is sent",
			req:     func() *llm.Request { r := base(); r.Temperature = &zero; return r },
			present: []string{"temperature"},
		},
		{
			name:   "empty tool list omits tools",
			req:    func() *llm.Request { r := base(); r.Tools = []llm.ToolSpec{}; return r },
			absent: []string{"tools"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeServer(t, sse(chunk(`{}`, "stop"), done))
			if _, _, err := collect(t, fs.provider(tt.cfg).Stream(context.Background(), tt.req())); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			var body map[string]json.RawMessage
			if err := json.Unmarshal(fs.requests()[0].body, &body); err != nil {
				t.Fatal(err)
			}
			for _, k := range tt.present {
				if _, ok := body[k]; !ok {
					t.Errorf("key %q missing from %s", k, fs.requests()[0].body)
				}
			}
			for _, k := range tt.absent {
				if _, ok := body[k]; ok {
					t.Errorf("key %q present in %s", k, fs.requests()[0].body)
				}
			}
			if tt.check != nil {
				tt.check(t, body)
			}
		})
	}
}

func TestRequestInvalidToolSchema(t *testing.T) {
	fs := newFakeServer(t, sse(done))
	req := simpleRequest()
	req.Tools = []llm.ToolSpec{{Name: "broken", Parameters: json.RawMessage(`{"type":`)}}
	_, _, err := collect(t, fs.provider(Config{}).Stream(context.Background(), req))
	ae := asAPIError(t, err)
	if !strings.Contains(ae.Message, "broken") || ae.Provider != "openai" {
		t.Errorf("error = %+v", ae)
	}
	if n := len(fs.requests()); n != 0 {
		t.Errorf("%d requests sent for an unbuildable request", n)
	}
}
