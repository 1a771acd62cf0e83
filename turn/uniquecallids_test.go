package turn

import (
	"slices"
	"strconv"
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

// A tool round in a long session does not rebuild a set of every call id
// the session holds: what it allocates does not grow with the history.
func TestUniqueCallIDsCostIndependentOfHistory(t *testing.T) {
	rows := make([]store.Message, 5000)
	for i := range rows {
		rows[i] = store.Message{Message: llm.Message{Role: llm.RoleAssistant,
			ToolCalls: []llm.ToolCall{{ID: "call_" + strconv.Itoa(i), Name: "read"}}}}
	}
	st := &state{in: Input{TurnID: "t9"}, rows: rows}
	calls := []llm.ToolCall{{ID: "call_7", Name: "read"}, {ID: "fresh", Name: "read"}, {Name: "read"}}
	got := uniqueCallIDs(calls, st)
	if ids := []string{got[0].ID, got[1].ID, got[2].ID}; !slices.Equal(ids, []string{"call_7_1", "fresh", "call_t9_3"}) {
		t.Fatalf("ids = %v", ids)
	}
	if n := testing.AllocsPerRun(20, func() { uniqueCallIDs(calls, st) }); n > 20 {
		t.Errorf("%.0f allocations for 3 calls in a session of %d calls: grows with the history", n, len(rows))
	}
}
