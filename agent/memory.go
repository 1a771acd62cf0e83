package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/talaria-agent/talaria/internal/setting"
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
	c.MaxTokens = setting.Or(c.MaxTokens, 1000)
	return c
}

// MemoryToolName is the name of the memory tool.
const MemoryToolName = "memory"

// MemoryQuery selects the agent's memory outside any gateway principal:
// its workspace and the configured user.
func (a *Agent) MemoryQuery() store.MemoryQuery { return a.memoryQueryFor("") }

// memoryQueryFor selects the memory a session of principal sees. A
// principal (the gateway's tenant) is the memory's user, so what one
// tenant's sessions store never reaches another tenant's prompt; without
// one (the CLI) the configured memory.user applies.
func (a *Agent) memoryQueryFor(principal string) store.MemoryQuery {
	user := a.cfg.Memory.User
	if principal != "" {
		user = principal
	}
	return store.MemoryQuery{Workspace: a.cfg.Workspace, User: user}
}

// AddMemory stores one entry in the agent's memory (outside any gateway
// principal); `talaria memory add` and embedders write through it.
func (a *Agent) AddMemory(ctx context.Context, text, sourceSession string) (store.MemoryEntry, error) {
	return a.addMemory(ctx, a.MemoryQuery(), text, sourceSession)
}

func (a *Agent) addMemory(ctx context.Context, q store.MemoryQuery, text, sourceSession string) (store.MemoryEntry, error) {
	if a.mem == nil {
		return store.MemoryEntry{}, fmt.Errorf("the agent's store (%T) keeps no memory", a.cfg.Store)
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return store.MemoryEntry{}, fmt.Errorf("a memory entry needs text")
	}
	e := store.MemoryEntry{Workspace: q.Workspace, User: q.User, Text: text, SourceSession: sourceSession,
		CreatedAt: a.now()}
	if err := a.mem.AddMemory(ctx, &e); err != nil {
		return e, err
	}
	return e, nil
}

// memoryBlock renders the memory for a session's system prompt: the
// newest entries that fit MaxTokens (about 4 bytes a token), oldest first.
// A session's prompt holds the block as it was when the prompt was built;
// a change is picked up by the one rebuild at the next turn's start
// (prompt.go), never in the middle of a turn.
func (a *Agent) memoryBlock(ctx context.Context, principal string) (string, error) {
	if !a.cfg.Memory.Enabled {
		return "", nil
	}
	entries, err := a.mem.Memories(ctx, a.memoryQueryFor(principal))
	if err != nil {
		return "", err
	}
	return renderMemory(entries, a.cfg.Memory.MaxTokens*4), nil
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

// memoryTool lets the model read and change the workspace memory. Listing
// reads only; adding and removing change what every later session of the
// workspace is told, so those calls ask for approval like any other change
// (a tool result that talks the model into storing "always run …" must not
// persist on its own).
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
		Parameters: json.RawMessage(memorySchema)}
}

// ReadOnlyCall reports the calls that only read: action "list".
func (m *memoryTool) ReadOnlyCall(args json.RawMessage) bool {
	var a struct {
		Action string `json:"action"`
	}
	return json.Unmarshal(args, &a) == nil && a.Action == "list"
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
	principal, source := "", ""
	if at := turnKey.From(ctx); at != nil {
		principal, source = at.principal, at.source
	}
	q := a.memoryQueryFor(principal)
	switch args.Action {
	case "list":
		entries, err := a.mem.Memories(ctx, q)
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
		e, err := a.addMemory(ctx, q, args.Text, source)
		if err != nil {
			return tool.Errorf("memory: %v", err), nil
		}
		return tool.Result{Content: "Remembered as entry " + strconv.FormatInt(e.ID, 10) + "."}, nil
	case "remove":
		// Only an entry of this memory's own user: a tenant must not
		// delete the shared entries or another tenant's.
		entries, err := a.mem.Memories(ctx, q)
		if err != nil {
			return tool.Result{}, err
		}
		if !slices.ContainsFunc(entries, func(e store.MemoryEntry) bool { return e.ID == args.ID && e.User == q.User }) {
			return tool.Errorf("memory: no entry %d of yours to remove (list shows the ids)", args.ID), nil
		}
		if err := a.mem.DeleteMemory(ctx, a.cfg.Workspace, args.ID); err != nil {
			return tool.Errorf("memory: no entry %d to remove (%v)", args.ID, err), nil
		}
		return tool.Result{Content: "Removed entry " + strconv.FormatInt(args.ID, 10) + "."}, nil
	}
	return tool.Errorf("memory: unknown action %q: use list, add or remove", args.Action), nil
}
