package accum

import (
	"reflect"
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

func TestStream(t *testing.T) {
	ev := func(typ llm.EventType, index int, text string) llm.Event {
		return llm.Event{Type: typ, Index: index, Text: text}
	}
	tests := []struct {
		name      string
		feed      func(s *Stream)
		events    []llm.Event
		emptyArgs string
		want      llm.Message
		reasoning string
	}{
		{
			name: "inline think tags split across fragments become reasoning",
			feed: func(s *Stream) { s.Text("<thi"); s.Text("nk>plan</think>answer"); s.Flush() },
			events: []llm.Event{
				ev(llm.EventReasoningDelta, 0, "plan"), ev(llm.EventTextDelta, 0, "answer"),
			},
			want:      llm.Message{Role: llm.RoleAssistant, Content: []llm.Part{llm.TextPart("answer")}},
			reasoning: "plan",
		},
		{
			name:      "text before an orphan close tag is stored as reasoning but was shown",
			feed:      func(s *Stream) { s.Text("plan</think>answer"); s.Flush() },
			events:    []llm.Event{ev(llm.EventTextDelta, 0, "plan</think>answer")},
			want:      llm.Message{Role: llm.RoleAssistant, Content: []llm.Part{llm.TextPart("answer")}},
			reasoning: "plan",
		},
		{
			name: "fragments before the start are yielded with it; calls sorted by index",
			feed: func(s *Stream) {
				c1 := s.Call(1)
				s.Args(c1, `{"a"`)
				c1.ID, c1.Name = "x", "f"
				s.Start(c1)
				s.Args(c1, `:1}`)
				s.Start(s.Call(0))
			},
			events: []llm.Event{
				{Type: llm.EventToolCallStart, Index: 1, ID: "x", Name: "f"},
				ev(llm.EventToolCallDelta, 1, `{"a"`),
				ev(llm.EventToolCallDelta, 1, `:1}`),
				{Type: llm.EventToolCallStart, Index: 0},
			},
			emptyArgs: "{}",
			want: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
				{Arguments: "{}"}, {ID: "x", Name: "f", Arguments: `{"a":1}`},
			}},
		},
		{
			name: "kept and event-only reasoning; refusals shown verbatim",
			feed: func(s *Stream) {
				s.Reasoning("r1")
				s.Note("\n\n")
				s.ReasoningEvent("signed")
				s.Visible("<think>no</think>")
			},
			events: []llm.Event{
				ev(llm.EventReasoningDelta, 0, "r1"), ev(llm.EventReasoningDelta, 0, "signed"),
				ev(llm.EventTextDelta, 0, "<think>no</think>"),
			},
			want:      llm.Message{Role: llm.RoleAssistant, Content: []llm.Part{llm.TextPart("<think>no</think>")}},
			reasoning: "r1\n\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Stream
			s.Begin()
			tt.feed(&s)
			if got := s.Events(); !reflect.DeepEqual(got, tt.events) {
				t.Errorf("events\n got %+v\nwant %+v", got, tt.events)
			}
			msg, reasoning := s.Message(tt.emptyArgs)
			if !reflect.DeepEqual(msg, tt.want) || reasoning != tt.reasoning {
				t.Errorf("message\n got %+v %q\nwant %+v %q", msg, reasoning, tt.want, tt.reasoning)
			}
		})
	}
}
