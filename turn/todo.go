package turn

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
)

// The plan the model keeps (the todo tool) is session state, stored as
// rows of kind store.RowTodo: a synthetic user row whose Content is the
// items as JSON (the state, read back typed) and whose APIContent is the
// block the model reads. A row is appended when the plan changes, after
// the tool round (never between a call and its results), so the next
// request carries the plan as its newest message and no earlier byte
// changes. A compression pass carries the newest one into the compressed
// transcript (carryTodo), a rotation's child session included: the plan
// comes from this stored state, never from what the summary kept.

// todoItems is the session's current plan: the one the turn set, else the
// newest RowTodo row's.
func (st *state) todoItems() []tool.TodoItem {
	if st.todoDirty {
		return st.todoNext
	}
	items, _ := latestTodo(st.rows)
	return items
}

// latestTodo decodes the newest live RowTodo row of rows; -1 when none.
func latestTodo(rows []store.Message) ([]tool.TodoItem, int) {
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].Kind != store.RowTodo || rows[i].Archived {
			continue
		}
		var items []tool.TodoItem
		if err := json.Unmarshal([]byte(rows[i].Text()), &items); err != nil {
			continue
		}
		return items, i
	}
	return nil, -1
}

// todoRow is the stored form of a plan.
func todoRow(items []tool.TodoItem) *store.Message {
	if items == nil {
		items = []tool.TodoItem{}
	}
	b, _ := json.Marshal(items)
	return &store.Message{Message: llm.NewText(llm.RoleUser, string(b)), APIContent: tool.TodoBlock(items),
		Kind: store.RowTodo, Synthetic: true}
}

// todoContext hands a todo call the current plan; the returned function
// records the plan the call left.
func (e *Engine) todoContext(ctx context.Context, st *state, c llm.ToolCall) (context.Context, func()) {
	if c.Name != tool.TodoToolName {
		return ctx, func() {}
	}
	box := &tool.TodoBox{Items: slices.Clone(st.todoItems())}
	return tool.WithTodo(ctx, box), func() {
		if box.Changed {
			st.todoNext, st.todoDirty = box.Items, true
		}
	}
}

// saveTodo stores the plan the round changed, shows it and reports it.
func (e *Engine) saveTodo(ctx context.Context, st *state) {
	if !st.todoDirty || st.res.Exit == ExitLeaseLost {
		return
	}
	items := st.todoNext
	if err := e.appendRows(ctx, st, todoRow(items)); err != nil {
		e.log.Warn("could not keep the todo list in the transcript", "session", st.sessionID(), "error", err)
		return
	}
	st.todoDirty, st.todoNext = false, nil
	if st.hooks.listening() {
		st.hooks.Emit(TodoChanged{Items: slices.Clone(items)})
	}
	if st.obs != nil {
		e.observe(st, &Event{Kind: EventTodo, Todo: slices.Clone(items)})
	}
}

// carryTodo puts the newest plan of before (the rows a pass compressed)
// at the end of the pass's rows, whatever the pass kept or summarized: one
// row, so the model reads the plan once, as the newest message.
func carryTodo(before []store.Message, out compact.Output) compact.Output {
	items, i := latestTodo(before)
	if i < 0 {
		return out
	}
	rows := make([]store.Message, 0, len(out.Rows)+1)
	for _, r := range out.Rows {
		if r.Kind != store.RowTodo {
			rows = append(rows, r)
		}
	}
	if len(items) > 0 {
		r := *todoRow(items)
		r.TurnID, r.CreatedAt = before[i].TurnID, before[i].CreatedAt
		rows = append(rows, r)
	}
	out.Rows = rows
	return out
}
