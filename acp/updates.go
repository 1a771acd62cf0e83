package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// maxDiffBytes bounds a file read to show an edit's diff.
const maxDiffBytes = 1 << 20

// toolKind maps Talaria's built-in tools onto ACP's kinds (icons in the
// editor); MCP and other tools are "other".
func toolKind(name string) string {
	switch name {
	case "read_file", "list_dir":
		return KindRead
	case "search_files", "glob":
		return KindSearch
	case "write_file", "edit_file":
		return KindEdit
	case "shell":
		return KindExecute
	case "todo":
		return KindThink
	}
	return KindOther
}

// toolArgs are the arguments of built-in tools that name a file or command.
type toolArgs struct {
	Path    string `json:"path"`
	Command string `json:"command"`
}

// toolCall describes a model's tool call for the client: its title names
// the file or command, its location the file (resolved against cwd).
func toolCall(c llm.ToolCall, cwd string) ToolCall {
	tc := ToolCall{ToolCallID: c.ID, Title: c.Name, Kind: toolKind(c.Name), RawInput: c.ArgumentsJSON()}
	var a toolArgs
	_ = json.Unmarshal([]byte(c.Arguments), &a)
	switch {
	case a.Command != "":
		tc.Title = c.Name + ": " + a.Command
	case a.Path != "":
		tc.Title = c.Name + " " + a.Path
		if p := resolve(cwd, a.Path); p != "" {
			tc.Locations = []ToolCallLocation{{Path: p}}
		}
	}
	return tc
}

func resolve(cwd, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	if cwd == "" {
		return ""
	}
	return filepath.Join(cwd, p)
}

// readSmall returns a file's text, or nil when it is missing or too large
// to diff.
func readSmall(path string) *string {
	st, err := os.Stat(path)
	if err != nil || st.Size() > maxDiffBytes {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	s := string(b)
	return &s
}

// turnWatch turns a running turn's hooks into session/update notifications.
type turnWatch struct {
	s  *Server
	ss *session

	mu     sync.Mutex
	before map[string]*string // an edit's file before it ran, by call id
}

func (w *turnWatch) hooks() turn.Hooks {
	id := w.ss.id
	return turn.Hooks{
		TextDelta: func(t string) {
			w.s.update(id, SessionUpdate{SessionUpdate: "agent_message_chunk", Content: ptr(TextBlock(t))})
		},
		ReasoningDelta: func(t string) {
			w.s.update(id, SessionUpdate{SessionUpdate: "agent_thought_chunk", Content: ptr(TextBlock(t))})
		},
		ToolStart: w.toolStart,
		ToolEnd:   w.toolEnd,
		Todo: func(items []tool.TodoItem) {
			w.s.update(id, SessionUpdate{SessionUpdate: "plan", Entries: planEntries(items)})
		},
	}
}

func (w *turnWatch) toolStart(c llm.ToolCall) {
	tc := toolCall(c, w.ss.cwd)
	tc.Status = StatusPending
	if tc.Kind == KindEdit && len(tc.Locations) == 1 {
		// Kept to show the edit as a diff when it is done. Through the
		// editor, the write itself records the diff (and asking the
		// editor here would precede the tool's confinement check).
		var before *string
		if !w.ss.files.write {
			before = readSmall(tc.Locations[0].Path)
		}
		w.mu.Lock()
		w.before[c.ID] = before
		w.mu.Unlock()
	}
	w.s.update(w.ss.id, SessionUpdate{SessionUpdate: "tool_call", ToolCall: &tc})
}

func (w *turnWatch) toolEnd(c llm.ToolCall, res tool.Result, _ time.Duration) {
	tc := ToolCall{ToolCallID: c.ID, Status: StatusCompleted}
	if res.IsError {
		tc.Status = StatusFailed
	}
	tc.Content = []ToolCallContent{{Type: "content", Content: ptr(TextBlock(res.Content))}}
	w.mu.Lock()
	before, edit := w.before[c.ID]
	delete(w.before, c.ID)
	w.mu.Unlock()
	if edit && !res.IsError {
		full := toolCall(c, w.ss.cwd)
		path := full.Locations[0].Path
		if w.ss.files.write {
			if e, ok := w.ss.files.takeWrite(path); ok && e.new != nil {
				tc.Content = append(tc.Content, ToolCallContent{Type: "diff", Path: path, OldText: e.old, NewText: e.new})
			}
		} else if after := readSmall(path); after != nil {
			tc.Content = append(tc.Content, ToolCallContent{Type: "diff", Path: path, OldText: before, NewText: after})
		}
	}
	w.s.update(w.ss.id, SessionUpdate{SessionUpdate: "tool_call_update", ToolCall: &tc})
}

// planEntries is the todo plan as ACP's plan entries. ACP calls a finished
// entry "completed" where the todo tool says "done".
func planEntries(items []tool.TodoItem) []PlanEntry {
	entries := make([]PlanEntry, len(items))
	for i, it := range items {
		st := StatusPending
		switch it.Status {
		case tool.TodoInProgress:
			st = StatusInProgress
		case tool.TodoDone:
			st = StatusCompleted
		}
		entries[i] = PlanEntry{Content: it.Text, Priority: "medium", Status: st}
	}
	return entries
}
