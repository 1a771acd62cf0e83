package acp

import (
	"testing"

	"github.com/talaria-agent/talaria/tool"
)

// The todo tool's statuses reach an ACP client in the protocol's words: a
// done item is "completed" (it used to arrive as "pending").
func TestPlanEntries(t *testing.T) {
	for _, tc := range []struct {
		status tool.TodoStatus
		want   string
	}{
		{tool.TodoPending, "pending"},
		{tool.TodoInProgress, "in_progress"},
		{tool.TodoDone, "completed"},
	} {
		t.Run(string(tc.status), func(t *testing.T) {
			got := planEntries([]tool.TodoItem{{ID: "1", Text: "write it", Status: tc.status}})
			if len(got) != 1 || got[0].Status != tc.want || got[0].Content != "write it" || got[0].Priority != "medium" {
				t.Errorf("planEntries(%s) = %+v, want status %q", tc.status, got, tc.want)
			}
		})
	}
}
