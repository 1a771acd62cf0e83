package builtin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/tool"
)

// The todo tool applies set and update to the plan in its box, and a bad
// call says why and leaves the box as it was.
func TestTodoSetAndUpdate(t *testing.T) {
	box := &tool.TodoBox{}
	ctx := tool.WithTodo(context.Background(), box)
	run := func(args string) tool.Result {
		t.Helper()
		res, err := Todo().Run(ctx, json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run(`{"action":"set","items":[{"id":"a","text":"  first   step "},{"id":"b","text":"second","status":"in_progress"}]}`); res.IsError || !box.Changed {
		t.Fatalf("set: %+v, changed %v", res, box.Changed)
	}
	want := []tool.TodoItem{{ID: "a", Text: "first step", Status: "pending"}, {ID: "b", Text: "second", Status: "in_progress"}}
	if len(box.Items) != 2 || box.Items[0] != want[0] || box.Items[1] != want[1] {
		t.Fatalf("after set: %+v", box.Items)
	}
	box.Changed = false
	if res := run(`{"action":"update","items":[{"id":"b","status":"done","text":"second, done"}]}`); res.IsError || !box.Changed || !strings.Contains(res.Content, "1 of 2 done") {
		t.Fatalf("update: %+v", res)
	}
	if box.Items[1] != (tool.TodoItem{ID: "b", Text: "second, done", Status: "done"}) || box.Items[0] != want[0] {
		t.Fatalf("after update: %+v", box.Items)
	}
	box.Changed = false
	before := append([]tool.TodoItem(nil), box.Items...)
	if res := run(`{"action":"update","items":[{"id":"a","status":"done"},{"id":"zz","status":"done"}]}`); !res.IsError || !strings.Contains(res.Content, `no item with id "zz"`) {
		t.Fatalf("unknown id: %+v", res)
	}
	if box.Changed || box.Items[0] != before[0] {
		t.Fatalf("a failed update changed the plan: %+v", box.Items)
	}
	if res, _ := Todo().Run(context.Background(), json.RawMessage(`{"action":"set","items":[]}`)); !res.IsError {
		t.Fatalf("outside a turn: %+v", res)
	}
}
