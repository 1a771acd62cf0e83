package openai

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

func TestStreamText(t *testing.T) {
	evs, resp, err := run(t, sse(
		chunk(`{"role":"assistant","content":"","refusal":null}`, ""),
		textChunk("Hel"),
		textChunk("lo, "),
		textChunk("world"),
		chunk(`{}`, "stop"),
		usageChunk(`{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}`),
		done,
	))
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	want := []llm.Event{
		{Type: llm.EventTextDelta, Text: "Hel"},
		{Type: llm.EventTextDelta, Text: "lo, "},
		{Type: llm.EventTextDelta, Text: "world"},
	}
	if got := evs[:len(evs)-1]; !reflect.DeepEqual(got, want) {
		t.Errorf("events = %+v, want %+v", got, want)
	}
	wantResp := &llm.Response{
		Message:         llm.NewText(llm.RoleAssistant, "Hello, world"),
		FinishReason:    llm.FinishStop,
		RawFinishReason: "stop",
		Usage:           llm.Usage{InputTokens: 12, OutputTokens: 3, Reported: true},
		Model:           "gpt-4o-mini-2024-07-18",
		ID:              "chatcmpl-abc",
	}
	if !reflect.DeepEqual(resp, wantResp) {
		t.Errorf("response = %+v, want %+v", resp, wantResp)
	}
}

func TestStreamToolCalls(t *testing.T) {
	tests := []struct {
		name       string
		payloads   []string
		wantEvents []llm.Event
		wantCalls  []llm.ToolCall
		wantText   string
	}{
		{
			name: "two calls, split args, interleaved indexes",
			payloads: []string{
				chunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_A","type":"function","function":{"name":"read_file","arguments":""}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}`, ""),
				chunk(`{"tool_calls":[{"index":1,"id":"call_B","type":"function","function":{"name":"list_dir","arguments":"{\"dir\""}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"th\": \"a.go\"}"}}]}`, ""),
				chunk(`{"tool_calls":[{"index":1,"function":{"arguments":":\".\"}"}}]}`, ""),
				chunk(`{}`, "tool_calls"),
				done,
			},
			wantEvents: []llm.Event{
				{Type: llm.EventToolCallStart, Index: 0, ID: "call_A", Name: "read_file"},
				{Type: llm.EventToolCallDelta, Index: 0, Text: `{"pa`},
				{Type: llm.EventToolCallStart, Index: 1, ID: "call_B", Name: "list_dir"},
				{Type: llm.EventToolCallDelta, Index: 1, Text: `{"dir"`},
				{Type: llm.EventToolCallDelta, Index: 0, Text: `th": "a.go"}`},
				{Type: llm.EventToolCallDelta, Index: 1, Text: `:"."}`},
			},
			wantCalls: []llm.ToolCall{
				{ID: "call_A", Name: "read_file", Arguments: `{"path": "a.go"}`},
				{ID: "call_B", Name: "list_dir", Arguments: `{"dir":"."}`},
			},
		},
		{
			name: "id repeated on every delta, text before the call",
			payloads: []string{
				textChunk("Checking."),
				chunk(`{"tool_calls":[{"index":0,"id":"call_X","type":"function","function":{"name":"grep","arguments":"{\"q\":"}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"id":"call_X","type":"function","function":{"name":"grep","arguments":"\"x\"}"}}]}`, ""),
				chunk(`{}`, "tool_calls"),
				done,
			},
			wantEvents: []llm.Event{
				{Type: llm.EventTextDelta, Text: "Checking."},
				{Type: llm.EventToolCallStart, Index: 0, ID: "call_X", Name: "grep"},
				{Type: llm.EventToolCallDelta, Index: 0, Text: `{"q":`},
				{Type: llm.EventToolCallDelta, Index: 0, Text: `"x"}`},
			},
			wantCalls: []llm.ToolCall{{ID: "call_X", Name: "grep", Arguments: `{"q":"x"}`}},
			wantText:  "Checking.",
		},
		{
			name: "no ids, name arrives after arguments",
			payloads: []string{
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"function":{"name":"calc","arguments":"1}"}}]}`, ""),
				chunk(`{"tool_calls":[{"index":1,"function":{"name":"now","arguments":""}}]}`, "tool_calls"),
				done,
			},
			wantEvents: []llm.Event{
				{Type: llm.EventToolCallStart, Index: 0, ID: "call_0", Name: "calc"},
				{Type: llm.EventToolCallDelta, Index: 0, Text: `{"a":1}`},
				{Type: llm.EventToolCallStart, Index: 1, ID: "call_1", Name: "now"},
			},
			wantCalls: []llm.ToolCall{
				{ID: "call_0", Name: "calc", Arguments: `{"a":1}`},
				{ID: "call_1", Name: "now", Arguments: ""},
			},
		},
		{
			name: "indexes missing, calls told apart by id (Gemini/Ollama style)",
			payloads: []string{
				chunk(`{"tool_calls":[{"id":"g1","type":"function","function":{"name":"a","arguments":"{}"}}]}`, ""),
				chunk(`{"tool_calls":[{"id":"g2","type":"function","function":{"name":"b","arguments":"{\"k\":1}"}}]}`, "tool_calls"),
				done,
			},
			wantEvents: []llm.Event{
				{Type: llm.EventToolCallStart, Index: 0, ID: "g1", Name: "a"},
				{Type: llm.EventToolCallDelta, Index: 0, Text: `{}`},
				{Type: llm.EventToolCallStart, Index: 1, ID: "g2", Name: "b"},
				{Type: llm.EventToolCallDelta, Index: 1, Text: `{"k":1}`},
			},
			wantCalls: []llm.ToolCall{
				{ID: "g1", Name: "a", Arguments: `{}`},
				{ID: "g2", Name: "b", Arguments: `{"k":1}`},
			},
		},
		{
			name: "duplicate ids across calls are made unique",
			payloads: []string{
				chunk(`{"tool_calls":[{"index":0,"id":"same","function":{"name":"a","arguments":"{}"}},{"index":1,"id":"same","function":{"name":"b","arguments":"{}"}}]}`, "tool_calls"),
				done,
			},
			wantEvents: []llm.Event{
				{Type: llm.EventToolCallStart, Index: 0, ID: "same", Name: "a"},
				{Type: llm.EventToolCallDelta, Index: 0, Text: `{}`},
				{Type: llm.EventToolCallStart, Index: 1, ID: "call_1", Name: "b"},
				{Type: llm.EventToolCallDelta, Index: 1, Text: `{}`},
			},
			wantCalls: []llm.ToolCall{
				{ID: "same", Name: "a", Arguments: `{}`},
				{ID: "call_1", Name: "b", Arguments: `{}`},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, resp, err := run(t, sse(tt.payloads...))
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if got := evs[:len(evs)-1]; !reflect.DeepEqual(got, tt.wantEvents) {
				t.Errorf("events =\n%+v\nwant\n%+v", got, tt.wantEvents)
			}
			if !reflect.DeepEqual(resp.Message.ToolCalls, tt.wantCalls) {
				t.Errorf("tool calls = %+v, want %+v", resp.Message.ToolCalls, tt.wantCalls)
			}
			if got := resp.Message.Text(); got != tt.wantText {
				t.Errorf("text = %q, want %q", got, tt.wantText)
			}
			if tt.wantText == "" && len(resp.Message.Content) != 0 {
				t.Errorf("content = %+v, want no parts when there is no text", resp.Message.Content)
			}
			if resp.FinishReason != llm.FinishToolCalls {
				t.Errorf("finish = %q, want tool_calls", resp.FinishReason)
			}
			if resp.Message.Role != llm.RoleAssistant {
				t.Errorf("role = %q", resp.Message.Role)
			}
		})
	}
}

func TestStreamReasoning(t *testing.T) {
	tests := []struct {
		name     string
		payloads []string
	}{
		{"reasoning_content (DeepSeek, vLLM)", []string{
			chunk(`{"role":"assistant","reasoning_content":"Think "}`, ""),
			chunk(`{"reasoning_content":"hard."}`, ""),
			chunk(`{"content":"42"}`, "stop"),
			done,
		}},
		{"reasoning (OpenRouter)", []string{
			chunk(`{"role":"assistant","content":"","reasoning":"Think "}`, ""),
			chunk(`{"content":"","reasoning":"hard."}`, ""),
			chunk(`{"content":"42","reasoning":null}`, "stop"),
			done,
		}},
		{"both fields with the same text", []string{
			chunk(`{"reasoning_content":"Think ","reasoning":"Think "}`, ""),
			chunk(`{"reasoning_content":"hard.","reasoning":"hard."}`, ""),
			chunk(`{"content":"42"}`, "stop"),
			done,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, resp, err := run(t, sse(tt.payloads...))
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			want := []llm.Event{
				{Type: llm.EventReasoningDelta, Text: "Think "},
				{Type: llm.EventReasoningDelta, Text: "hard."},
				{Type: llm.EventTextDelta, Text: "42"},
			}
			if got := evs[:len(evs)-1]; !reflect.DeepEqual(got, want) {
				t.Errorf("events = %+v, want %+v", got, want)
			}
			if resp.Message.Reasoning == nil || resp.Message.Reasoning.Text != "Think hard." {
				t.Errorf("reasoning = %+v, want Think hard.", resp.Message.Reasoning)
			}
			if resp.Message.Text() != "42" {
				t.Errorf("text = %q", resp.Message.Text())
			}
		})
	}
}

func TestStreamUsage(t *testing.T) {
	tests := []struct {
		name  string
		usage string // "" sends no usage chunk
		want  llm.Usage
	}{
		{
			name:  "OpenAI with cached and reasoning tokens",
			usage: `{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":256,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`,
			want:  llm.Usage{InputTokens: 86, CacheReadTokens: 1920, OutputTokens: 300, ReasoningTokens: 256, Reported: true},
		},
		{
			name:  "OpenRouter with cache writes and cost",
			usage: `{"prompt_tokens":194,"completion_tokens":2,"total_tokens":196,"cost":0.95,"prompt_tokens_details":{"cached_tokens":0,"cache_write_tokens":100,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}`,
			want:  llm.Usage{InputTokens: 94, CacheWriteTokens: 100, OutputTokens: 2, Reported: true},
		},
		{
			name:  "DeepSeek cache hit counters",
			usage: `{"prompt_tokens":1000,"completion_tokens":50,"total_tokens":1050,"prompt_cache_hit_tokens":640,"prompt_cache_miss_tokens":360}`,
			want:  llm.Usage{InputTokens: 360, CacheReadTokens: 640, OutputTokens: 50, Reported: true},
		},
		{
			name:  "reported zeros stay reported",
			usage: `{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`,
			want:  llm.Usage{Reported: true},
		},
		{
			name: "no usage at all (llama.cpp, older servers)",
			want: llm.Usage{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payloads := []string{textChunk("ok"), chunk(`{}`, "stop")}
			if tt.usage != "" {
				payloads = append(payloads, usageChunk(tt.usage))
			}
			payloads = append(payloads, done)
			_, resp, err := run(t, sse(payloads...))
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if resp.Usage != tt.want {
				t.Errorf("usage = %+v, want %+v", resp.Usage, tt.want)
			}
		})
	}
}

func TestStreamFinishReasons(t *testing.T) {
	tests := []struct {
		name     string
		payloads []string
		want     llm.FinishReason
		wantRaw  string
		wantText string
	}{
		{"stop", []string{textChunk("a"), chunk(`{}`, "stop"), done}, llm.FinishStop, "stop", "a"},
		{"length", []string{textChunk("a"), chunk(`{}`, "length"), done}, llm.FinishLength, "length", "a"},
		{"content_filter", []string{chunk(`{}`, "content_filter"), done}, llm.FinishContentFilter, "content_filter", ""},
		{"function_call (legacy)", []string{chunk(`{}`, "function_call"), done}, llm.FinishToolCalls, "function_call", ""},
		{"unknown kept raw", []string{textChunk("a"), chunk(`{}`, "eos_token_weird"), done}, llm.FinishUnknown, "eos_token_weird", "a"},
		{"finish_reason on the chunk that carries content", []string{chunk(`{"content":"last words"}`, "stop"), done}, llm.FinishStop, "stop", "last words"},
		{"[DONE] without finish_reason", []string{textChunk("a"), done}, llm.FinishUnknown, "", "a"},
		{"finish_reason without [DONE]", []string{textChunk("a"), chunk(`{}`, "stop")}, llm.FinishStop, "stop", "a"},
		{
			"chunks with empty choices are skipped",
			[]string{
				`{"id":"x","object":"chat.completion.chunk","model":"m","choices":[]}`,
				textChunk("a"),
				`{"id":"x","object":"chat.completion.chunk","model":"m","choices":[]}`,
				chunk(`{}`, "stop"),
				done,
			},
			llm.FinishStop, "stop", "a",
		},
		{
			"refusal",
			[]string{chunk(`{"content":null,"refusal":"I can't help with that."}`, ""), chunk(`{}`, "stop"), done},
			llm.FinishRefusal, "stop", "I can't help with that.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, resp, err := run(t, sse(tt.payloads...))
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if resp.FinishReason != tt.want || resp.RawFinishReason != tt.wantRaw {
				t.Errorf("finish = %q (raw %q), want %q (raw %q)", resp.FinishReason, resp.RawFinishReason, tt.want, tt.wantRaw)
			}
			if got := resp.Message.Text(); got != tt.wantText {
				t.Errorf("text = %q, want %q", got, tt.wantText)
			}
			if got := textOf(evs, llm.EventTextDelta); got != tt.wantText {
				t.Errorf("streamed text = %q, want %q", got, tt.wantText)
			}
		})
	}
}

// Some servers ignore stream:true and answer with one chat.completion.
func TestNonStreamedAnswer(t *testing.T) {
	body := `{"id":"chatcmpl-9","object":"chat.completion","created":1,"model":"llama-3","choices":[{"index":0,"message":{"role":"assistant","content":"Sure.","reasoning_content":"why not","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}},{"type":"function","function":{"name":"pwd","arguments":""}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`
	evs, resp, err := run(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	wantCalls := []llm.ToolCall{{ID: "c1", Name: "ls", Arguments: "{}"}, {ID: "call_1", Name: "pwd"}}
	if !reflect.DeepEqual(resp.Message.ToolCalls, wantCalls) {
		t.Errorf("tool calls = %+v, want %+v", resp.Message.ToolCalls, wantCalls)
	}
	if resp.Message.Text() != "Sure." || resp.Message.Reasoning.Text != "why not" {
		t.Errorf("message = %+v", resp.Message)
	}
	if resp.FinishReason != llm.FinishToolCalls || resp.Usage.InputTokens != 10 || !resp.Usage.Reported {
		t.Errorf("response = %+v", resp)
	}
	if got := textOf(evs, llm.EventTextDelta); got != "Sure." {
		t.Errorf("streamed text = %q", got)
	}
}
