package turn

import (
	"reflect"
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

// What changed between two stamps, and the line that says it.
func TestDiffStamps(t *testing.T) {
	tools := func(specs ...llm.ToolSpec) map[string]string { return StampTools(specs) }
	read := llm.ToolSpec{Name: "read", Description: "reads", Parameters: []byte(`{"type":"object"}`)}
	readV2 := llm.ToolSpec{Name: "read", Description: "reads files", Parameters: []byte(`{"type":"object"}`)}
	late := llm.ToolSpec{Name: "t__late", Description: "late"}
	base := PromptStamp{Tools: tools(read), Memory: StampText(""), Instructions: StampText("x")}
	cases := []struct {
		name string
		cur  PromptStamp
		want PromptRebuilt
		line string
	}{
		{"tool added", PromptStamp{Tools: tools(read, late), Memory: base.Memory, Instructions: base.Instructions},
			PromptRebuilt{ToolsAdded: []string{"t__late"}},
			"capabilities changed (1 tool added: t__late): system prompt rebuilt once"},
		{"tool removed, memory", PromptStamp{Tools: tools(), Memory: StampText("- fact\n"), Instructions: base.Instructions},
			PromptRebuilt{ToolsRemoved: []string{"read"}, Memory: true},
			"capabilities changed (1 tool removed: read; memory changed): system prompt rebuilt once"},
		{"tool description changed", PromptStamp{Tools: tools(readV2), Memory: base.Memory, Instructions: base.Instructions},
			PromptRebuilt{ToolsChanged: []string{"read"}},
			"capabilities changed (1 tool changed: read): system prompt rebuilt once"},
		{"instructions", PromptStamp{Tools: tools(read), Memory: base.Memory, Instructions: StampText("y")},
			PromptRebuilt{Instructions: true},
			"capabilities changed (instructions changed): system prompt rebuilt once"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := diffStamps(base, c.cur)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("diff %+v, want %+v", got, c.want)
			}
			if got.Line() != c.line {
				t.Errorf("line %q, want %q", got.Line(), c.line)
			}
			back, err := ParsePromptStamp(c.cur.String())
			if err != nil || back.String() != c.cur.String() {
				t.Errorf("stamp round trip: %v %q", err, back.String())
			}
		})
	}
	many := PromptRebuilt{ToolsAdded: []string{"a", "b", "c", "d", "e"}}
	if l := many.Line(); l != "capabilities changed (5 tools added: a, b, c, …): system prompt rebuilt once" {
		t.Errorf("line %q", l)
	}
	// The same inputs give the same bytes whatever the map order.
	if a, b := (PromptStamp{Tools: tools(read, late)}).String(), (PromptStamp{Tools: tools(late, read)}).String(); a != b {
		t.Errorf("stamp bytes depend on tool order: %s vs %s", a, b)
	}
}
