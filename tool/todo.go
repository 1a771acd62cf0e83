package tool

import (
	"context"
	"fmt"
	"strings"

	"github.com/talaria-agent/talaria/internal/ctxkey"
)

// TodoToolName is the name of the plan tool (tool/builtin's Todo).
const TodoToolName = "todo"

// TodoStatus is where a plan item stands.
type TodoStatus string

// Todo item statuses.
const (
	TodoPending    TodoStatus = "pending"
	TodoInProgress TodoStatus = "in_progress"
	TodoDone       TodoStatus = "done"
)

// Valid reports whether s is one of the three statuses.
func (s TodoStatus) Valid() bool {
	switch s {
	case TodoPending, TodoInProgress, TodoDone:
		return true
	}
	return false
}

// TodoItem is one step of the plan the model keeps with the todo tool.
type TodoItem struct {
	ID     string     `json:"id"`
	Text   string     `json:"text"`
	Status TodoStatus `json:"status"`
}

// TodoBox carries a session's plan to the todo tool and its new state
// back: the engine fills Items with the current plan before the call; the
// tool replaces Items and sets Changed when the call changed it.
type TodoBox struct {
	Items   []TodoItem
	Changed bool
}

var todoKey = ctxkey.New[*TodoBox]("todo")

// WithTodo gives the todo tool the plan of the session it runs in.
func WithTodo(ctx context.Context, b *TodoBox) context.Context { return todoKey.With(ctx, b) }

// TodoFrom returns the box WithTodo set, or nil outside a turn.
func TodoFrom(ctx context.Context) *TodoBox { return todoKey.From(ctx) }

// TodoCounts counts the plan's items done and in total.
func TodoCounts(items []TodoItem) (done, total int) {
	for _, it := range items {
		if it.Status == TodoDone {
			done++
		}
	}
	return done, len(items)
}

// TodoLine is the plan as one compact progress line, e.g.
// "plan 1/3 done · now: write the tests".
func TodoLine(items []TodoItem) string {
	done, total := TodoCounts(items)
	if total == 0 {
		return "plan cleared"
	}
	line := fmt.Sprintf("plan %d/%d done", done, total)
	var now []string
	for _, it := range items {
		if it.Status == TodoInProgress {
			now = append(now, it.Text)
		}
	}
	if len(now) > 0 {
		line += " · now: " + strings.Join(now, "; ")
	}
	return line
}

// TodoBlock is the plan as the model reads it: one line an item, with its
// id and status, in the order the model gave.
func TodoBlock(items []TodoItem) string {
	if len(items) == 0 {
		return "Your todo list is empty."
	}
	var b strings.Builder
	b.WriteString("Your todo list (kept with the todo tool; update it as you work):\n")
	for _, it := range items {
		mark := " "
		switch it.Status {
		case TodoInProgress:
			mark = ">"
		case TodoDone:
			mark = "x"
		}
		fmt.Fprintf(&b, "[%s] %s: %s (%s)\n", mark, it.ID, it.Text, it.Status)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
