package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
)

// MemoryConfig configures the durable memory of the workspace.
type MemoryConfig struct {
	// Enabled offers the memory tool and puts the memory block in the
	// system prompt of every new session.
	Enabled bool
	// User scopes entries to one user as well (the gateway's principal);
	// "" keeps one memory shared by everyone using the workspace.
	User string
	// MaxTokens bounds the memory block in the system prompt (default
	// 1000); the newest entries that fit are kept.
	MaxTokens int
}

func (c MemoryConfig) withDefaults() MemoryConfig {
	if c.MaxTokens <= 0 {
		c.MaxTokens = 1000
	}
	return c
}

// MemoryToolName is the name of the memory tool.
const MemoryToolName = "memory"

// MemoryQuery selects the agent's memory: its workspace and user.
func (a *Agent) MemoryQuery() store.MemoryQuery {
	return store.MemoryQuery{Workspace: a.cfg.Workspace, User: a.cfg.Memory.User}
}

// AddMemory stores one entry in the agent's memory; the memory tool, the
// background review and `talaria memory add` all write through it.
func (a *Agent) AddMemory(ctx context.Context, text, sourceSession string) (store.MemoryEntry, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return store.MemoryEntry{}, fmt.Errorf("a memory entry needs text")
	}
	e := store.MemoryEntry{Workspace: a.cfg.Workspace, User: a.cfg.Memory.User, Text: text, SourceSession: sourceSession,
		CreatedAt: a.now()}
	if err := a.cfg.Store.AddMemory(ctx, &e); err != nil {
		return e, err
	}
	return e, nil
}

// memoryBlock renders the memory for a new session's system prompt: the
// newest entries that fit MaxTokens (about 4 bytes a token), oldest first.
// It is computed once, at session creation, so a session's prompt bytes
// never change when memory changes mid-session.
func (a *Agent) memoryBlock(ctx context.Context) string {
	if !a.cfg.Memory.Enabled {
		return ""
	}
	entries, err := a.cfg.Store.Memories(ctx, a.MemoryQuery())
	if err != nil {
		a.log.Warn("could not read memory for the system prompt", "error", err)
		return ""
	}
	return renderMemory(entries, a.cfg.Memory.MaxTokens*4)
}

const memoryHeader = "\nMemory (facts kept from earlier sessions in this workspace; use the memory tool to add or remove entries):\n"

func renderMemory(entries []store.MemoryEntry, budget int) string {
	if len(entries) == 0 {
		return ""
	}
	budget -= len(memoryHeader)
	var lines []string
	for i := len(entries) - 1; i >= 0; i-- {
		line := "- " + strings.Join(strings.Fields(entries[i].Text), " ") + "\n"
		if len(line) > budget {
			break
		}
		budget -= len(line)
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(memoryHeader)
	for i := len(lines) - 1; i >= 0; i-- {
		b.WriteString(lines[i])
	}
	return b.String()
}

// memoryTool lets the model read and change the workspace memory. It is
// marked read-only: it never touches the workspace, only Talaria's own
// memory, so it needs no approval.
type memoryTool struct{ a *Agent }

const memoryDescription = `Durable memory for this workspace, kept across sessions and shown at the start of every new session. Add short, lasting facts worth knowing next time: the user's preferences, the project's conventions, decisions taken and why. Do not store secrets or things that are only true right now.
action "list" shows the entries with their ids; "add" stores text as a new entry; "remove" deletes the entry with that id.`

const memorySchema = `{"type":"object","properties":{` +
	`"action":{"type":"string","enum":["list","add","remove"]},` +
	`"text":{"type":"string","description":"The fact to remember (add)."},` +
	`"id":{"type":"integer","description":"The entry to remove (remove)."}` +
	`},"required":["action"]}`

func (m *memoryTool) Info() tool.Info {
	return tool.Info{Name: MemoryToolName, Description: memoryDescription,
		Parameters: json.RawMessage(memorySchema), ReadOnly: true}
}

func (m *memoryTool) Run(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var args struct {
		Action string `json:"action"`
		Text   string `json:"text"`
		ID     int64  `json:"id"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return tool.Errorf("memory: %v", err), nil
	}
	a := m.a
	switch args.Action {
	case "list":
		entries, err := a.cfg.Store.Memories(ctx, a.MemoryQuery())
		if err != nil {
			return tool.Result{}, err
		}
		if len(entries) == 0 {
			return tool.Result{Content: "Memory is empty."}, nil
		}
		var b strings.Builder
		for _, e := range entries {
			fmt.Fprintf(&b, "%d: %s\n", e.ID, e.Text)
		}
		return tool.Result{Content: b.String()}, nil
	case "add":
		source := ""
		if at := turnFrom(ctx); at != nil {
			source = at.source
		}
		e, err := a.AddMemory(ctx, args.Text, source)
		if err != nil {
			return tool.Errorf("memory: %v", err), nil
		}
		return tool.Result{Content: "Remembered as entry " + strconv.FormatInt(e.ID, 10) + "."}, nil
	case "remove":
		if err := a.cfg.Store.DeleteMemory(ctx, a.cfg.Workspace, args.ID); err != nil {
			return tool.Errorf("memory: no entry %d to remove (%v)", args.ID, err), nil
		}
		return tool.Result{Content: "Removed entry " + strconv.FormatInt(args.ID, 10) + "."}, nil
	}
	return tool.Errorf("memory: unknown action %q: use list, add or remove", args.Action), nil
}
