package anthropic

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
)

func TestStreamText(t *testing.T) {
	api := newFakeAPI(t, streamOf(textStream()...))
	events, resp, err := run(t, api.provider(), t.Context(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.Event{
		{Type: llm.EventTextDelta, Text: "Hello"},
		{Type: llm.EventTextDelta, Text: ", world"},
	}
	if !reflect.DeepEqual(events, want) {
		t.Errorf("events = %+v, want %+v", events, want)
	}
	if got := resp.Message.Text(); got != "Hello, world" {
		t.Errorf("text = %q", got)
	}
	if resp.Message.Role != llm.RoleAssistant {
		t.Errorf("role = %q", resp.Message.Role)
	}
	if resp.FinishReason != llm.FinishStop || resp.RawFinishReason != "end_turn" {
		t.Errorf("finish = %q/%q", resp.FinishReason, resp.RawFinishReason)
	}
	if resp.Model != "claude-sonnet-4-5-20250929" || resp.ID != "msg_01XFDUDYJgAACzvnptvVoYEL" {
		t.Errorf("model/id = %q/%q", resp.Model, resp.ID)
	}
	if resp.Message.ToolCalls != nil || resp.Message.Reasoning != nil {
		t.Errorf("unexpected tool calls/reasoning: %+v", resp.Message)
	}
	if got := api.calls.Load(); got != 1 {
		t.Errorf("HTTP requests = %d, want 1", got)
	}
}

func TestStreamToolUse(t *testing.T) {
	api := newFakeAPI(t, streamOf(
		messageStart(100, 0, 0),
		textStart(0), textDelta(0, "Let me look."), blockStop(0),
		toolStart(1, "toolu_01A", "read_file"),
		jsonDelta(1, ""), jsonDelta(1, `{"pa`), jsonDelta(1, `th": "a.t`), jsonDelta(1, `xt"}`),
		blockStop(1),
		toolStart(2, "toolu_01B", "list_dir"),
		jsonDelta(2, `{"dir":`), jsonDelta(2, ` "."}`),
		blockStop(2),
		toolStart(3, "toolu_01C", "now"), // no deltas at all
		blockStop(3),
		messageDelta("tool_use", 80), messageStop(),
	))
	events, resp, err := run(t, api.provider(), t.Context(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	wantCalls := []llm.ToolCall{
		{ID: "toolu_01A", Name: "read_file", Arguments: `{"path": "a.txt"}`},
		{ID: "toolu_01B", Name: "list_dir", Arguments: `{"dir": "."}`},
		{ID: "toolu_01C", Name: "now", Arguments: `{}`},
	}
	if !reflect.DeepEqual(resp.Message.ToolCalls, wantCalls) {
		t.Errorf("tool calls = %+v\nwant %+v", resp.Message.ToolCalls, wantCalls)
	}
	if resp.FinishReason != llm.FinishToolCalls {
		t.Errorf("finish = %q", resp.FinishReason)
	}
	if resp.Message.Text() != "Let me look." {
		t.Errorf("text = %q", resp.Message.Text())
	}
	wantEvents := []llm.Event{
		{Type: llm.EventTextDelta, Text: "Let me look."},
		{Type: llm.EventToolCallStart, Index: 0, ID: "toolu_01A", Name: "read_file"},
		{Type: llm.EventToolCallDelta, Index: 0, Text: `{"pa`},
		{Type: llm.EventToolCallDelta, Index: 0, Text: `th": "a.t`},
		{Type: llm.EventToolCallDelta, Index: 0, Text: `xt"}`},
		{Type: llm.EventToolCallStart, Index: 1, ID: "toolu_01B", Name: "list_dir"},
		{Type: llm.EventToolCallDelta, Index: 1, Text: `{"dir":`},
		{Type: llm.EventToolCallDelta, Index: 1, Text: ` "."}`},
		{Type: llm.EventToolCallStart, Index: 2, ID: "toolu_01C", Name: "now"},
	}
	if !reflect.DeepEqual(events, wantEvents) {
		t.Errorf("events =\n%+v\nwant\n%+v", events, wantEvents)
	}
}

func TestStreamThinkingRoundTrip(t *testing.T) {
	stream := []string{
		messageStart(50, 0, 0),
		sse("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`),
		sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user wants "}}`),
		sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"a greeting."}}`),
		sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}}`),
		blockStop(0),
		sse("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4a"}}`),
		blockStop(1),
		textStart(2), textDelta(2, "Hi!"), blockStop(2),
		messageDelta("end_turn", 30), messageStop(),
	}
	var second atomic.Bool
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		if second.Swap(true) {
			writeEvents(w, textStream()...)
			return
		}
		writeEvents(w, stream...)
	})
	p := api.provider()
	events, resp, err := run(t, p, t.Context(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	wantReasoning := &llm.Reasoning{
		Text:      "The user wants a greeting.",
		Signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3h",
		Redacted:  "EmwKAhgBEgy3va3pzix/LafPsn4a",
		Blocks: []llm.ThinkingBlock{
			{Type: "thinking", Thinking: "The user wants a greeting.", Signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"},
			{Type: "redacted_thinking", Data: "EmwKAhgBEgy3va3pzix/LafPsn4a"},
		},
		API:   "anthropic",
		Model: simpleRequest().Model,
	}
	if !reflect.DeepEqual(resp.Message.Reasoning, wantReasoning) {
		t.Errorf("reasoning = %+v, want %+v", resp.Message.Reasoning, wantReasoning)
	}
	var reasoningDeltas []string
	for _, e := range events {
		if e.Type == llm.EventReasoningDelta {
			reasoningDeltas = append(reasoningDeltas, e.Text)
		}
	}
	if !reflect.DeepEqual(reasoningDeltas, []string{"The user wants ", "a greeting."}) {
		t.Errorf("reasoning deltas = %q", reasoningDeltas)
	}

	// Replay the answer: the thinking block and its signature must go back
	// unchanged, first in the assistant turn.
	req := simpleRequest()
	req.Messages = append(req.Messages, resp.Message, llm.NewText(llm.RoleUser, "again"))
	if _, _, err := run(t, p, t.Context(), req); err != nil {
		t.Fatal(err)
	}
	var sent struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(api.body(1), &sent); err != nil {
		t.Fatal(err)
	}
	if len(sent.Messages) != 3 || sent.Messages[1].Role != "assistant" {
		t.Fatalf("messages = %s", api.body(1))
	}
	got := sent.Messages[1].Content
	want := []string{
		`{"type":"thinking","thinking":"The user wants a greeting.","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}`,
		`{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4a"}`,
		`{"type":"text","text":"Hi!"}`,
	}
	if len(got) != len(want) {
		t.Fatalf("assistant content = %s", got)
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("block %d = %s, want %s", i, got[i], want[i])
		}
	}
}

func TestStreamUsage(t *testing.T) {
	tests := []struct {
		name   string
		events []string
		want   llm.Usage
	}{
		{
			name:   "plain",
			events: textStream(),
			want:   llm.Usage{InputTokens: 25, OutputTokens: 12, Reported: true},
		},
		{
			name: "cache read and write",
			events: []string{
				messageStart(12, 4000, 350), textStart(0), textDelta(0, "x"), blockStop(0),
				messageDelta("end_turn", 7), messageStop(),
			},
			want: llm.Usage{InputTokens: 12, CacheReadTokens: 4000, CacheWriteTokens: 350, OutputTokens: 7, Reported: true},
		},
		{
			name: "cumulative output in message_delta wins",
			events: []string{
				messageStart(10, 0, 0), textStart(0), textDelta(0, "x"), blockStop(0),
				sse("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":503}}`),
				messageStop(),
			},
			want: llm.Usage{InputTokens: 10, OutputTokens: 503, Reported: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, streamOf(tt.events...))
			_, resp, err := run(t, api.provider(), t.Context(), simpleRequest())
			if err != nil {
				t.Fatal(err)
			}
			if resp.Usage != tt.want {
				t.Errorf("usage = %+v, want %+v", resp.Usage, tt.want)
			}
		})
	}
}

func TestStreamStopReasons(t *testing.T) {
	tests := []struct {
		raw  string
		want llm.FinishReason
	}{
		{"end_turn", llm.FinishStop},
		{"stop_sequence", llm.FinishStop},
		{"tool_use", llm.FinishToolCalls},
		{"max_tokens", llm.FinishLength},
		{"refusal", llm.FinishRefusal},
		{"pause_turn", llm.FinishUnknown},
		{"model_context_window_exceeded", llm.FinishUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			api := newFakeAPI(t, streamOf(
				messageStart(5, 0, 0), textStart(0), textDelta(0, "x"), blockStop(0),
				messageDelta(tt.raw, 3), messageStop(),
			))
			_, resp, err := run(t, api.provider(), t.Context(), simpleRequest())
			if err != nil {
				t.Fatal(err)
			}
			if resp.FinishReason != tt.want || resp.RawFinishReason != tt.raw {
				t.Errorf("finish = %q/%q, want %q/%q", resp.FinishReason, resp.RawFinishReason, tt.want, tt.raw)
			}
		})
	}
}

func TestStreamAPIKey(t *testing.T) {
	tests := []struct {
		name       string
		configKey  string
		requestKey string
		want       string
	}{
		{"config key", "sk-config", "", "sk-config"},
		{"request key overrides", "sk-config", "sk-rotated", "sk-rotated"},
		{"request key alone", "", "sk-rotated", "sk-rotated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, streamOf(textStream()...))
			p := New(Config{BaseURL: api.URL, APIKey: tt.configKey, HTTPClient: api.Client()})
			req := simpleRequest()
			req.APIKey = tt.requestKey
			if _, _, err := run(t, p, t.Context(), req); err != nil {
				t.Fatal(err)
			}
			h := api.header(0)
			if got := h.Get("x-api-key"); got != tt.want {
				t.Errorf("x-api-key = %q, want %q", got, tt.want)
			}
			if got := h.Get("Authorization"); got != "" {
				t.Errorf("Authorization = %q, want none (keys go in x-api-key)", got)
			}
		})
	}
}

func TestStreamConfigHeadersAndBaseURL(t *testing.T) {
	api := newFakeAPI(t, streamOf(textStream()...))
	p := New(Config{
		Name:       "claude-direct",
		BaseURL:    api.URL + "/v1/", // tolerated: the adapter appends v1/messages itself
		HTTPClient: api.Client(),
		Headers:    map[string]string{"anthropic-beta": "interleaved-thinking-2025-05-14"},
	})
	if p.Name() != "claude-direct" {
		t.Errorf("Name = %q", p.Name())
	}
	if _, _, err := run(t, p, t.Context(), simpleRequest()); err != nil {
		t.Fatal(err)
	}
	if got := api.header(0).Get("anthropic-beta"); got != "interleaved-thinking-2025-05-14" {
		t.Errorf("anthropic-beta = %q", got)
	}
}

// Reading the body to its end after message_stop lets the next call reuse
// the connection instead of paying for a new handshake.
func TestStreamReusesConnection(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeEvents(w, textStream()...)
		// The end of the body arrives after message_stop, as it can on a
		// real network; closing the body early would drop the connection.
		time.Sleep(30 * time.Millisecond)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	p := New(Config{BaseURL: srv.URL, HTTPClient: srv.Client()})
	for range 3 {
		if _, _, err := run(t, p, t.Context(), simpleRequest()); err != nil {
			t.Fatal(err)
		}
	}
	if got := conns.Load(); got != 1 {
		t.Errorf("connections = %d, want 1 (reused)", got)
	}
}
