package transcript

import (
	"reflect"
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

func TestRepair(t *testing.T) {
	withImage := user("look")
	withImage.Content = append(withImage.Content, image())
	imageOnly := llm.Message{Role: llm.RoleUser, Content: []llm.Part{image()}}
	reasoned := asst("", llm.ToolCall{})
	reasoned.ToolCalls = nil
	reasoned.Reasoning = &llm.Reasoning{Text: "thinking", Signature: "sig"}
	reasonedFixed := reasoned
	reasonedFixed.Content = []llm.Part{llm.TextPart(InterruptedPlaceholder)}
	laterReasoning := asst("b", call("c1"))
	laterReasoning.Reasoning = &llm.Reasoning{Text: "r2"}
	mergedReasoning := asst("a\n\nb", call("c1"))
	mergedReasoning.Reasoning = &llm.Reasoning{Text: "r2"}
	splitReasoned := asst("and this", call("c2"))
	splitReasoned.Reasoning = &llm.Reasoning{Text: "second thoughts"}
	splitMerged := asst("reading both\n\nand this", call("c1"), call("c2"), call("c3"))
	splitMerged.Reasoning = &llm.Reasoning{Text: "second thoughts"}
	renamed := func(m llm.Message, id string) llm.Message { m.ToolCallID = id; return m }
	callNamed := func(id, args string) llm.ToolCall { c := call(args); c.ID = id; return c }

	tests := []struct {
		name string
		in   []llm.Message
		want []llm.Message
		rep  Report
	}{
		{
			name: "valid sequence unchanged",
			in:   []llm.Message{user("hi"), asst("", call("c1"), call("c2")), result("c1", "r1"), result("c2", "r2"), asst("done"), user("next")},
			want: []llm.Message{user("hi"), asst("", call("c1"), call("c2")), result("c1", "r1"), result("c2", "r2"), asst("done"), user("next")},
		},
		{
			// Issue 11, item 8: parallel calls stored as consecutive
			// assistant messages, then all results. The earlier calls'
			// real results must not become "interrupted".
			name: "one turn split over consecutive assistant messages",
			in:   []llm.Message{user("go"), asst("reading both", call("c1")), splitReasoned, asst("", call("c3")), result("c1", "r1"), result("c2", "r2"), result("c3", "r3"), asst("done")},
			want: []llm.Message{user("go"), splitMerged, result("c1", "r1"), result("c2", "r2"), result("c3", "r3"), asst("done")},
			rep:  Report{MergedCallGroups: 2},
		},
		{
			name: "a split turn whose results come out of order",
			in:   []llm.Message{user("go"), asst("", call("c1")), asst("", call("c2")), result("c2", "r2"), result("c1", "r1"), asst("done")},
			want: []llm.Message{user("go"), asst("", call("c1"), call("c2")), result("c1", "r1"), result("c2", "r2"), asst("done")},
			rep:  Report{MergedCallGroups: 1, Reordered: 1},
		},
		{
			name: "sequential rounds are not merged",
			in:   []llm.Message{user("go"), asst("", call("c1")), result("c1", "r1"), asst("", call("c2")), result("c2", "r2"), asst("done")},
			want: []llm.Message{user("go"), asst("", call("c1")), result("c1", "r1"), asst("", call("c2")), result("c2", "r2"), asst("done")},
		},
		{
			name: "empty input",
			in:   nil,
			want: []llm.Message{},
		},
		{
			name: "leading assistant and tool dropped",
			in:   []llm.Message{asst("stale"), result("c0", "x"), user("hi"), asst("hello")},
			want: []llm.Message{user("hi"), asst("hello")},
			rep:  Report{DroppedLeading: 2},
		},
		{
			name: "no user message at all",
			in:   []llm.Message{asst("a"), result("c0", "x")},
			want: []llm.Message{},
			rep:  Report{DroppedLeading: 2},
		},
		{
			name: "system and unknown roles dropped",
			in:   []llm.Message{llm.NewText(llm.RoleSystem, "sys"), user("hi"), llm.NewText("", "?"), asst("ok")},
			want: []llm.Message{user("hi"), asst("ok")},
			rep:  Report{InvalidRoles: 2},
		},
		{
			name: "orphan results dropped",
			in: []llm.Message{
				user("hi"), result("c9", "no assistant yet"),
				asst("", call("c1")), result("c1", "r1"), result("c1", "answered twice"), result("c2", "unknown call"),
				asst("text only"), result("c1", "nearest assistant has no calls"),
			},
			want: []llm.Message{user("hi"), asst("", call("c1")), result("c1", "r1"), asst("text only")},
			rep:  Report{OrphanResults: 4},
		},
		{
			name: "missing results after existing ones, in call order",
			in:   []llm.Message{user("hi"), asst("", call("c1"), call("c2"), call("c3")), result("c2", "r2"), user("again")},
			want: []llm.Message{user("hi"), asst("", call("c1"), call("c2"), call("c3")), result("c2", "r2"), missing("c1"), missing("c3"), user("again")},
			rep:  Report{MissingResults: 2},
		},
		{
			name: "crash after the assistant row, before any result",
			in:   []llm.Message{user("hi"), asst("working", call("c1"))},
			want: []llm.Message{user("hi"), asst("working", call("c1")), missing("c1")},
			rep:  Report{MissingResults: 1},
		},
		{
			name: "results out of call order",
			in:   []llm.Message{user("hi"), asst("", call("c1"), call("c2"), call("c3")), result("c3", "r3"), result("c1", "r1"), result("c2", "r2")},
			want: []llm.Message{user("hi"), asst("", call("c1"), call("c2"), call("c3")), result("c1", "r1"), result("c2", "r2"), result("c3", "r3")},
			rep:  Report{Reordered: 1},
		},
		{
			name: "result recorded after a steering message is pulled back",
			in:   []llm.Message{user("hi"), asst("", call("c1"), call("c2")), result("c1", "r1"), user("steer"), result("c2", "r2")},
			want: []llm.Message{user("hi"), asst("", call("c1"), call("c2")), result("c1", "r1"), result("c2", "r2"), user("steer")},
			rep:  Report{Reordered: 1},
		},
		{
			name: "recorded synthetic result stays after recorded real ones",
			in:   []llm.Message{user("hi"), asst("", call("c1"), call("c2")), missing("c1"), result("c2", "r2")},
			want: []llm.Message{user("hi"), asst("", call("c1"), call("c2")), result("c2", "r2"), missing("c1")},
			rep:  Report{Reordered: 1},
		},
		{
			name: "duplicate id across the sequence renamed with its result",
			in: []llm.Message{
				user("a"), asst("", call("x")), result("x", "r1"),
				user("b"), asst("", call("x")), result("x", "r2"),
			},
			want: []llm.Message{
				user("a"), asst("", call("x")), result("x", "r1"),
				user("b"), asst("", callNamed("x_2", "x")), renamed(result("x", "r2"), "x_2"),
			},
			rep: Report{DuplicateIDs: 1},
		},
		{
			name: "duplicate id within one message pairs results in order",
			in:   []llm.Message{user("a"), asst("", call("x"), call("x")), result("x", "first"), result("x", "second")},
			want: []llm.Message{user("a"), asst("", call("x"), callNamed("x_2", "x")), result("x", "first"), renamed(result("x", "second"), "x_2")},
			rep:  Report{DuplicateIDs: 1},
		},
		{
			name: "new name avoids an id used later",
			in: []llm.Message{
				user("a"), asst("", call("x")), result("x", "r1"),
				user("b"), asst("", call("x")), result("x", "r2"),
				user("c"), asst("", call("x_2")), result("x_2", "r3"),
			},
			want: []llm.Message{
				user("a"), asst("", call("x")), result("x", "r1"),
				user("b"), asst("", callNamed("x_3", "x")), renamed(result("x", "r2"), "x_3"),
				user("c"), asst("", call("x_2")), result("x_2", "r3"),
			},
			rep: Report{DuplicateIDs: 1},
		},
		{
			name: "empty call id gets one",
			in:   []llm.Message{user("a"), asst("", call("")), result("", "r")},
			want: []llm.Message{user("a"), asst("", callNamed("call_1", "")), renamed(result("", "r"), "call_1")},
			rep:  Report{EmptyIDs: 1},
		},
		{
			name: "consecutive users merge",
			in:   []llm.Message{user("one"), user("two"), user("three"), asst("ok")},
			want: []llm.Message{user("one\n\ntwo\n\nthree"), asst("ok")},
			rep:  Report{MergedUsers: 2},
		},
		{
			name: "merged user keeps images in order",
			in:   []llm.Message{withImage, user("and this")},
			want: []llm.Message{{Role: llm.RoleUser, Content: []llm.Part{llm.TextPart("look"), image(), llm.TextPart("and this")}}},
			rep:  Report{MergedUsers: 1},
		},
		{
			name: "users merge across a dropped orphan",
			in:   []llm.Message{user("one"), result("c1", "orphan"), user("two")},
			want: []llm.Message{user("one\n\ntwo")},
			rep:  Report{OrphanResults: 1, MergedUsers: 1},
		},
		{
			name: "merging a blank user adds no separator",
			in:   []llm.Message{user(""), user("real")},
			want: []llm.Message{user("real")},
			rep:  Report{MergedUsers: 1},
		},
		{
			name: "assistants merge, later calls and reasoning kept",
			in:   []llm.Message{user("hi"), asst("a"), laterReasoning, result("c1", "r1")},
			want: []llm.Message{user("hi"), mergedReasoning, result("c1", "r1")},
			rep:  Report{MergedAssistants: 1},
		},
		{
			name: "assistant after a call group does not merge",
			in:   []llm.Message{user("hi"), asst("", call("c1")), result("c1", "r"), asst("done")},
			want: []llm.Message{user("hi"), asst("", call("c1")), result("c1", "r"), asst("done")},
		},
		{
			name: "empty assistant gets the placeholder",
			in:   []llm.Message{user("hi"), asst(""), user("hello?")},
			want: []llm.Message{user("hi"), asst(InterruptedPlaceholder), user("hello?")},
			rep:  Report{EmptyAssistants: 1},
		},
		{
			name: "whitespace-only assistant gets the placeholder, reasoning kept",
			in:   []llm.Message{user("hi"), reasoned},
			want: []llm.Message{user("hi"), reasonedFixed},
			rep:  Report{EmptyAssistants: 1},
		},
		{
			name: "assistant with calls but no text is fine",
			in:   []llm.Message{user("hi"), asst("  ", call("c1")), result("c1", "")},
			want: []llm.Message{user("hi"), asst("  ", call("c1")), result("c1", "")},
		},
		{
			name: "empty user gets neutral text",
			in:   []llm.Message{user(" \n"), asst("?")},
			want: []llm.Message{user(EmptyUserText), asst("?")},
			rep:  Report{EmptyUsers: 1},
		},
		{
			name: "image-only user is not empty",
			in:   []llm.Message{imageOnly, asst("a cat")},
			want: []llm.Message{imageOnly, asst("a cat")},
		},
		{
			name: "ghost assistant between users: placeholder, no merge",
			in:   []llm.Message{user("one"), asst(""), user("two")},
			want: []llm.Message{user("one"), asst(InterruptedPlaceholder), user("two")},
			rep:  Report{EmptyAssistants: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := deepClone(tc.in)
			got, rep := Repair(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Repair:\n got  %+v\n want %+v", got, tc.want)
			}
			if rep != tc.rep {
				t.Errorf("report = %v, want %v", rep, tc.rep)
			}
			if rep.Changed() != (tc.rep != Report{}) {
				t.Errorf("Changed() = %v", rep.Changed())
			}
			if !reflect.DeepEqual(tc.in, before) {
				t.Errorf("input modified:\n now  %+v\n was  %+v", tc.in, before)
			}
			if err := validate(got); err != nil {
				t.Errorf("output invalid: %v", err)
			}
			again, rep2 := Repair(got)
			if rep2.Changed() || !reflect.DeepEqual(again, got) {
				t.Errorf("not idempotent: second report %v", rep2)
			}
		})
	}
}

func TestRepairSharesUnchangedContent(t *testing.T) {
	in := []llm.Message{user("hi"), asst("", call("c1")), result("c1", "r1"), user("x"), user("y")}
	out, _ := Repair(in)
	if &out[0].Content[0] != &in[0].Content[0] {
		t.Error("an unchanged message's content was copied")
	}
	if &out[1].ToolCalls[0] != &in[1].ToolCalls[0] {
		t.Error("unchanged tool calls were copied")
	}
	if &out[3].Content[0] == &in[3].Content[0] {
		t.Error("a merged message shares its content with the input")
	}
	out = append(out, user("appended"))
	if len(in) != 5 || in[4].Text() != "y" {
		t.Error("appending to the output changed the input")
	}
}

func TestReportString(t *testing.T) {
	tests := []struct {
		rep  Report
		want string
	}{
		{Report{}, "ok"},
		{Report{OrphanResults: 1, MissingResults: 2}, "orphan_results=1 missing_results=2"},
		{Report{DroppedLeading: 1, EmptyUsers: 3}, "dropped_leading=1 empty_users=3"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.rep.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}
