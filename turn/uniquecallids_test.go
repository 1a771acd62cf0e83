package turn

import (
	"slices"
	"testing"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// uniqueCallIDs renames calls whose id is empty or already used in the
// session (or earlier in the same round), so each result pairs with
// exactly one call; other ids are kept.
func TestUniqueCallIDs(t *testing.T) {
	stored := func(ids ...string) []store.Message {
		m := store.Message{Message: llm.Message{Role: llm.RoleAssistant}}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: id, Name: "read"})
		}
		return []store.Message{m}
	}
	tests := []struct {
		name    string
		history []store.Message
		ids     []string
		want    []string
	}{
		{"fresh ids are kept", nil, []string{"a", "b"}, []string{"a", "b"}},
		{"no calls", stored("a"), nil, []string{}},
		{"missing id", nil, []string{""}, []string{"call_t1_1"}},
		{"two missing ids", nil, []string{"", ""}, []string{"call_t1_1", "call_t1_2"}},
		{"missing id numbered by position", nil, []string{"a", ""}, []string{"a", "call_t1_2"}},
		{"id used earlier in the session", stored("a"), []string{"a"}, []string{"a_1"}},
		{"id repeated in the round", nil, []string{"x", "x"}, []string{"x", "x_2"}},
		{"renamed id taken too", stored("x", "x_2"), []string{"y", "x"}, []string{"y", "x_3"}},
		{"generated id taken", stored("call_t1_1"), []string{""}, []string{"call_t1_2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &state{in: Input{TurnID: "t1"}, rows: tt.history}
			calls := make([]llm.ToolCall, len(tt.ids))
			for i, id := range tt.ids {
				calls[i] = llm.ToolCall{ID: id, Name: "read", Arguments: `{"i":` + string(rune('0'+i)) + `}`}
			}
			in := slices.Clone(calls)
			out := uniqueCallIDs(calls, st)
			got := []string{}
			for i, c := range out {
				got = append(got, c.ID)
				if c.Name != in[i].Name || c.Arguments != in[i].Arguments {
					t.Errorf("call %d changed beyond its id: %+v", i, c)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("ids %q, want %q", got, tt.want)
			}
			if !slices.Equal(calls, in) {
				t.Errorf("the input calls were modified: %+v", calls)
			}
			seen := map[string]bool{}
			for _, r := range tt.history {
				for _, c := range r.ToolCalls {
					seen[c.ID] = true
				}
			}
			for _, id := range got {
				if id == "" || seen[id] {
					t.Errorf("id %q is empty or not unique in %q", id, got)
				}
				seen[id] = true
			}
		})
	}
}
