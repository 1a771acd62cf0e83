package llm

import (
	"encoding/json"
	"testing"
)

func TestMergeReasoning(t *testing.T) {
	cp := json.RawMessage(`{"type":"compaction","id":"cmp_1","encrypted_content":"x"}`)
	cp2 := json.RawMessage(`{"type":"compaction","id":"cmp_2","encrypted_content":"y"}`)
	rs := json.RawMessage(`{"type":"reasoning","id":"rs_1"}`)
	rs2 := json.RawMessage(`{"type":"reasoning","id":"rs_2"}`)
	older := &Reasoning{API: "openai-responses", Items: []json.RawMessage{cp, rs}}
	tests := []struct {
		name         string
		older, newer *Reasoning
		want         []string
	}{
		{"newer empty keeps older", older, nil, []string{"cmp_1", "rs_1"}},
		{"newer wins, older checkpoint kept", older, &Reasoning{Items: []json.RawMessage{rs2}}, []string{"cmp_1", "rs_2"}},
		{"newer checkpoint replaces older", older, &Reasoning{Items: []json.RawMessage{cp2, rs2}}, []string{"cmp_2", "rs_2"}},
		{"no checkpoint: newer wins", &Reasoning{Items: []json.RawMessage{rs}}, &Reasoning{Items: []json.RawMessage{rs2}}, []string{"rs_2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MergeReasoning(tt.older, tt.newer)
			var ids []string
			for _, it := range got.Items {
				var h struct{ ID string }
				_ = json.Unmarshal(it, &h)
				ids = append(ids, h.ID)
			}
			if len(ids) != len(tt.want) {
				t.Fatalf("items = %v, want %v", ids, tt.want)
			}
			for i := range ids {
				if ids[i] != tt.want[i] {
					t.Fatalf("items = %v, want %v", ids, tt.want)
				}
			}
		})
	}
	if len(older.Items) != 2 {
		t.Errorf("the older reasoning was modified")
	}
}
