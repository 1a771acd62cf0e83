package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/talaria-agent/talaria/tool"
)

// Bounds of a plan: it is injected into every request of the session, so
// it stays short.
const (
	todoMaxItems = 50
	todoMaxText  = 300
)

const todoDescription = `Keep a plan for a task with several steps: the current list is shown to you after every change and kept for the rest of the session, compression included.
action "set" replaces the whole list with items (each with a short unique id, its text and status; status defaults to pending); "update" changes the status (and optionally the text) of the items given by id. Mark an item in_progress when you start it and done as soon as it is finished.`

var todoSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"action":{"type":"string","enum":["set","update"]},` +
	`"items":{"type":"array","items":{"type":"object","properties":{` +
	`"id":{"type":"string"},` +
	`"text":{"type":"string"},` +
	`"status":{"type":"string","enum":["pending","in_progress","done"]}` +
	`},"required":["id"],"additionalProperties":false}}` +
	`},"required":["action","items"],"additionalProperties":false}`)

type todoArgs struct {
	Action string          `json:"action"`
	Items  []tool.TodoItem `json:"items"`
}

// Todo is the plan tool: the model sets and updates a list of steps that
// the engine keeps per session (tool.TodoBox carries it in and out). It
// changes nothing outside the session, so it runs without approval.
func Todo() tool.Tool { return todoTool{} }

type todoTool struct{}

func (todoTool) Info() tool.Info {
	return tool.Info{Name: tool.TodoToolName, Description: todoDescription, Parameters: todoSchema, AutoApprove: true}
}

func (todoTool) Run(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	if ctx.Err() != nil {
		return tool.Errorf("interrupted before todo started"), nil
	}
	// Strict, like the schema (additionalProperties false): an embedder's
	// unvalidated call with other tools' arguments is an error.
	var a todoArgs
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return tool.Errorf("todo: invalid arguments: %v", err), nil
	}
	box := tool.TodoFrom(ctx)
	if box == nil {
		return tool.Errorf("todo: the plan is kept per session, and this call runs outside one"), nil
	}
	var next []tool.TodoItem
	var err error
	switch a.Action {
	case "set":
		next, err = todoSet(a.Items)
	case "update":
		next, err = todoUpdate(box.Items, a.Items)
	default:
		err = fmt.Errorf("unknown action %q: use set or update", a.Action)
	}
	if err != nil {
		return tool.Errorf("todo: %v; the list is unchanged", err), nil
	}
	box.Changed = !slices.Equal(next, box.Items)
	box.Items = next
	done, total := tool.TodoCounts(next)
	return tool.Result{Content: fmt.Sprintf("Todo list saved: %d of %d done.", done, total)}, nil
}

// todoSet checks a whole new list.
func todoSet(items []tool.TodoItem) ([]tool.TodoItem, error) {
	if len(items) > todoMaxItems {
		return nil, fmt.Errorf("%d items is more than %d: keep the plan to the main steps", len(items), todoMaxItems)
	}
	seen := map[string]bool{}
	out := make([]tool.TodoItem, 0, len(items))
	for i, it := range items {
		it.ID, it.Text = strings.TrimSpace(it.ID), strings.Join(strings.Fields(it.Text), " ")
		if it.ID == "" {
			return nil, fmt.Errorf("item %d has no id", i+1)
		}
		if seen[it.ID] {
			return nil, fmt.Errorf("id %q is used twice: ids must be unique", it.ID)
		}
		seen[it.ID] = true
		if it.Text == "" {
			return nil, fmt.Errorf("item %q has no text", it.ID)
		}
		if err := checkTodoItem(&it); err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}

// todoUpdate applies status (and text) changes to the current list.
func todoUpdate(cur, changes []tool.TodoItem) ([]tool.TodoItem, error) {
	if len(changes) == 0 {
		return nil, fmt.Errorf("update needs at least one item")
	}
	out := slices.Clone(cur)
	for _, ch := range changes {
		id := strings.TrimSpace(ch.ID)
		i := slices.IndexFunc(out, func(it tool.TodoItem) bool { return it.ID == id })
		if i < 0 {
			return nil, fmt.Errorf("no item with id %q (the list has %s); use set to add items", id, todoIDs(cur))
		}
		if ch.Status == "" {
			return nil, fmt.Errorf("item %q: update needs a status (pending, in_progress or done)", id)
		}
		it := out[i]
		it.Status = ch.Status
		if t := strings.Join(strings.Fields(ch.Text), " "); t != "" {
			it.Text = t
		}
		if err := checkTodoItem(&it); err != nil {
			return nil, err
		}
		out[i] = it
	}
	return out, nil
}

func checkTodoItem(it *tool.TodoItem) error {
	if it.Status == "" {
		it.Status = tool.TodoPending
	}
	if !it.Status.Valid() {
		return fmt.Errorf("item %q: status %q is not pending, in_progress or done", it.ID, it.Status)
	}
	if len(it.Text) > todoMaxText {
		return fmt.Errorf("item %q: text is %d bytes, more than %d: say the step in a line", it.ID, len(it.Text), todoMaxText)
	}
	return nil
}

func todoIDs(items []tool.TodoItem) string {
	if len(items) == 0 {
		return "no items"
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = fmt.Sprintf("%q", it.ID)
	}
	return "ids " + strings.Join(ids, ", ")
}
