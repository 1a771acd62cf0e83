package anthropic

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

// feedAll runs raw SSE text through the assembler the way Stream does.
func feedAll(t *testing.T, stream string) (*assembler, []llm.Event, error) {
	t.Helper()
	a := newAssembler()
	var events []llm.Event
	for _, chunk := range strings.Split(strings.TrimSpace(stream), "\n\n") {
		var name, data string
		for _, line := range strings.Split(chunk, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				name = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				data = v
			}
		}
		evs, err := a.feed(name, []byte(data))
		if err != nil {
			return a, events, err
		}
		events = append(events, evs...)
	}
	return a, events, nil
}

func TestAssembler(t *testing.T) {
	tests := []struct {
		name   string
		stream []string
		check  func(t *testing.T, r *llm.Response)
	}{
		{
			name: "tool input given whole at block start",
			stream: []string{
				messageStart(1, 0, 0),
				sse("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_9","name":"get","input":{ "k" : [1, 2] }}}`),
				blockStop(0), messageDelta("tool_use", 2), messageStop(),
			},
			check: func(t *testing.T, r *llm.Response) {
				want := []llm.ToolCall{{ID: "toolu_9", Name: "get", Arguments: `{"k":[1,2]}`}}
				if !reflect.DeepEqual(r.Message.ToolCalls, want) {
					t.Errorf("tool calls = %+v", r.Message.ToolCalls)
				}
			},
		},
		{
			name: "signature at block start and empty thinking text",
			stream: []string{
				messageStart(1, 0, 0),
				sse("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":"sig-start"}}`),
				blockStop(0), textStart(1), textDelta(1, "ok"), blockStop(1), messageDelta("end_turn", 2), messageStop(),
			},
			check: func(t *testing.T, r *llm.Response) {
				if want := (&llm.Reasoning{Signature: "sig-start", API: "anthropic", Blocks: []llm.ThinkingBlock{{Type: "thinking", Signature: "sig-start"}}}); !reflect.DeepEqual(r.Message.Reasoning, want) {
					t.Errorf("reasoning = %+v", r.Message.Reasoning)
				}
			},
		},
		{
			name: "several thinking blocks are all kept, each whole",
			stream: []string{
				messageStart(1, 0, 0),
				sse("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`),
				sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"one"}}`),
				sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"s1"}}`),
				blockStop(0),
				sse("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":""}}`),
				sse("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"two"}}`),
				sse("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"s2"}}`),
				blockStop(1), messageDelta("end_turn", 2), messageStop(),
			},
			check: func(t *testing.T, r *llm.Response) {
				if want := (&llm.Reasoning{Text: "one", Signature: "s1", API: "anthropic", Blocks: []llm.ThinkingBlock{
					{Type: "thinking", Thinking: "one", Signature: "s1"}, {Type: "thinking", Thinking: "two", Signature: "s2"}}}); !reflect.DeepEqual(r.Message.Reasoning, want) {
					t.Errorf("reasoning = %+v", r.Message.Reasoning)
				}
			},
		},
		{
			name: "zero prompt counts in message_delta do not erase message_start's",
			stream: []string{
				messageStart(900, 100, 50), textStart(0), textDelta(0, "x"), blockStop(0),
				sse("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":0,"cache_read_input_tokens":0,"output_tokens":9}}`),
				messageStop(),
			},
			check: func(t *testing.T, r *llm.Response) {
				want := llm.Usage{InputTokens: 900, CacheReadTokens: 100, CacheWriteTokens: 50, OutputTokens: 9, Reported: true}
				if r.Usage != want {
					t.Errorf("usage = %+v, want %+v", r.Usage, want)
				}
			},
		},
		{
			name: "text without a block start, unknown blocks and events are tolerated",
			stream: []string{
				messageStart(1, 0, 0),
				textDelta(0, "stray "),
				sse("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`),
				jsonDelta(1, `{"query":"x"}`),
				blockStop(1),
				sse("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"citations_delta","citation":{"type":"char_location"}}}`),
				sse("brand_new_event", `{"type":"brand_new_event","x":1}`),
				textDelta(0, "text"),
				messageDelta("end_turn", 2), messageStop(),
			},
			check: func(t *testing.T, r *llm.Response) {
				if r.Message.Text() != "stray text" || r.Message.ToolCalls != nil {
					t.Errorf("message = %+v", r.Message)
				}
			},
		},
		{
			name:   "no usage reported",
			stream: []string{sse("message_start", `{"type":"message_start","message":{"id":"m","model":"x"}}`), messageStop()},
			check: func(t *testing.T, r *llm.Response) {
				if r.Usage.Reported || r.FinishReason != llm.FinishUnknown || r.RawFinishReason != "" {
					t.Errorf("usage/finish = %+v/%q", r.Usage, r.FinishReason)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _, err := feedAll(t, strings.Join(tt.stream, ""))
			if err != nil {
				t.Fatal(err)
			}
			if !a.stopped {
				t.Fatal("message_stop not seen")
			}
			tt.check(t, a.response())
		})
	}
}

func TestAssemblerErrors(t *testing.T) {
	tests := []struct {
		name    string
		event   string
		wantErr any
	}{
		{"error event", sse("error", `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`), new(*streamErrorEvent)},
		{"error type without event name", "data: " + `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}` + "\n\n", new(*streamErrorEvent)},
		{"bad JSON", sse("content_block_delta", `{"type":`), new(*malformedEventError)},
		{"index out of range", sse("content_block_delta", `{"type":"content_block_delta","index":1e30}`), new(*malformedEventError)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := feedAll(t, messageStart(1, 0, 0)+tt.event)
			if err == nil {
				t.Fatal("want an error")
			}
			if !errors.As(err, tt.wantErr) {
				t.Errorf("error %T (%v) is not %T", err, err, tt.wantErr)
			}
		})
	}
}

// FuzzAssembler feeds arbitrary event data: the assembler must never panic,
// and whatever it assembles must be consistent with what it yielded.
func FuzzAssembler(f *testing.F) {
	for _, s := range textStream() {
		f.Add("message_start", []byte(strings.TrimPrefix(strings.SplitN(s, "\n", 3)[1], "data: ")))
	}
	f.Add("content_block_start", []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"n","input":{"a":1}}}`))
	f.Add("content_block_delta", []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a"}}`))
	f.Add("content_block_delta", []byte(`{"type":"content_block_delta","index":-5,"delta":{"type":"signature_delta","signature":"s"}}`))
	f.Add("error", []byte(`{"type":"error","error":"x"}`))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		a := newAssembler()
		// Prime with a tool call and text so deltas have blocks to hit.
		for _, ev := range []string{messageStart(1, 0, 0), toolStart(0, "t", "n"), textStart(1)} {
			if _, err := a.feed("", []byte(strings.TrimSuffix(strings.SplitN(ev, "data: ", 2)[1], "\n\n"))); err != nil {
				t.Fatal(err)
			}
		}
		var text bytes.Buffer
		for range 2 {
			evs, err := a.feed(name, data)
			if err != nil {
				return
			}
			for _, e := range evs {
				if e.Type == llm.EventTextDelta {
					text.WriteString(e.Text)
				}
			}
		}
		if r := a.response(); r.Message.Text() != text.String() {
			t.Errorf("assembled text %q != yielded text %q", r.Message.Text(), text.String())
		}
	})
}
