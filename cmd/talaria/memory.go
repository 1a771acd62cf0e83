package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/internal/slicesx"
	"github.com/talaria-agent/talaria/store"
)

const memoryUsage = `Commands:
  talaria memory list [--json]          the workspace's memory entries
  talaria memory add "TEXT"             keep a fact for future sessions
  talaria memory rm ID                  remove an entry
  talaria memory clear                  remove every entry of the workspace (and user)

Flags: --workspace DIR (default: the project root, as for run and chat), --user NAME (memory.user in the config).
New sessions start with the memory in their system prompt; a running session keeps the prompt it started with.

'talaria memory COMMAND --help' shows one command's flags and examples.`

var memoryHelp = cmdHelp{
	name:     "memory",
	usage:    "list|add|rm|clear ...",
	about:    memoryUsage,
	examples: []string{"talaria memory list", `talaria memory add "Use tabs, not spaces, in this repo"`},
}

const memoryNote = `
--workspace DIR picks the workspace (default: the project root), --user
NAME the user besides the shared memory (default: memory.user in the config).
New sessions start with the memory in their system prompt; a running session
keeps the prompt it started with.`

var memorySubs = map[string]cmdHelp{
	"list": {name: "memory list", usage: "[--workspace DIR] [--user NAME] [--json]",
		about:    "Lists the workspace's memory entries (and the user's).\n" + memoryNote,
		examples: []string{"talaria memory list", "talaria memory list --workspace ~/src/app --json"}},
	"add": {name: "memory add", usage: `"TEXT" [--workspace DIR] [--user NAME] [--json]`,
		about:    "Keeps a fact for future sessions of the workspace.\n" + memoryNote,
		examples: []string{`talaria memory add "Run go test -race before committing"`, `talaria memory add --user ana "Ana prefers short answers"`}},
	"rm": {name: "memory rm", usage: "ID [--workspace DIR]",
		about:    "Removes one entry (talaria memory list shows the ids).\n" + memoryNote,
		examples: []string{"talaria memory rm 3", "talaria memory rm 3 --workspace ~/src/app"}},
	"clear": {name: "memory clear", usage: "[--workspace DIR] [--user NAME]",
		about:    "Removes every entry of the workspace (and of the user).\n" + memoryNote,
		examples: []string{"talaria memory clear", "talaria memory clear --workspace ~/src/app"}},
}

var memoryAliases = map[string]string{"ls": "list", "remove": "rm", "delete": "rm"}

func (c *cli) memoryCmd(ctx context.Context, args []string) int {
	if code, done := c.subcommandHead(args, memoryHelp, "list, add, rm or clear"); done {
		return code
	}
	sub, h, code, done := c.subcommand(memoryHelp, memorySubs, memoryAliases, args[0])
	if done {
		return code
	}
	fs := h.flags()
	jsonOut := fs.Bool("json", false, "print JSON")
	ws := fs.String("workspace", "", "the workspace whose memory to use (default: the project root, as for run and chat)")
	user := fs.String("user", "", "the user whose memory to use besides the shared one (default: memory.user)")
	var dbFlag string
	databaseFlag(fs, &dbFlag)
	if code, done := c.parseFlags(fs, h, interleaved(args[1:])); done {
		return code
	}
	pos := fs.Args()
	switch sub {
	case "add":
		if strings.TrimSpace(strings.Join(pos, " ")) == "" {
			return c.usageError(h, "needs the text to keep")
		}
	case "rm":
		if len(pos) != 1 {
			return c.usageError(h, "needs one entry id (talaria memory list shows them)")
		}
		if _, err := strconv.ParseInt(pos[0], 10, 64); err != nil {
			return c.usageError(h, "%q is not an entry id", pos[0])
		}
	}
	cfg, err := c.loadConfig()
	if err != nil {
		return c.fail(exitUsage, "%v", err)
	}
	// The memory of the project: run and chat use the same root.
	dir, _, err := workspaceDir(*ws)
	if err != nil {
		return c.fail(exitUsage, "workspace: %v", err)
	}
	q := store.MemoryQuery{Workspace: dir, User: cfg.Memory.User}
	if *user != "" {
		q.User = *user
	}
	var st store.Store
	if sub == "add" {
		st, err = openStore(ctx, cfg, dbFlag, c.logger(cfg, false))
	} else { // list, rm, clear: there must be memory to read or change
		st, err = c.openStoreFor(ctx, cfg, dbFlag, sub == "list")
	}
	if err != nil {
		return c.fail(exitOther, "%v", err)
	}
	defer st.Close()

	switch sub {
	case "list":
		return c.memoryList(ctx, st, q, *jsonOut)
	case "add":
		text := strings.TrimSpace(strings.Join(pos, " "))
		e := store.MemoryEntry{Workspace: dir, User: q.User, Text: text}
		if err := st.AddMemory(ctx, &e); err != nil {
			return c.fail(exitOther, "%v", err)
		}
		if *jsonOut {
			return c.printJSON(memoryOut{ID: e.ID, Text: e.Text, User: e.User, CreatedAt: e.CreatedAt})
		}
		fmt.Fprintf(c.stdout, "remembered as entry %d\n", e.ID)
	case "rm":
		id, _ := strconv.ParseInt(pos[0], 10, 64)
		if err := st.DeleteMemory(ctx, dir, id); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return c.fail(exitUsage, "there is no memory entry %d for %s (talaria memory list shows them)", id, dir)
			}
			return c.fail(exitOther, "%v", err)
		}
		fmt.Fprintf(c.stdout, "removed entry %d\n", id)
	case "clear":
		n, err := st.ClearMemory(ctx, q)
		if err != nil {
			return c.fail(exitOther, "%v", err)
		}
		fmt.Fprintf(c.stdout, "removed %d entries\n", n)
	}
	return exitOK
}

// memoryList prints the memory q selects.
func (c *cli) memoryList(ctx context.Context, st store.Store, q store.MemoryQuery, jsonOut bool) int {
	entries, err := st.Memories(ctx, q)
	if err != nil {
		return c.fail(exitOther, "%v", err)
	}
	if jsonOut {
		return c.printJSON(slicesx.Map(entries, func(e store.MemoryEntry) memoryOut {
			return memoryOut{ID: e.ID, Text: e.Text, User: e.User, SourceSession: e.SourceSession, CreatedAt: e.CreatedAt}
		}))
	}
	if len(entries) == 0 {
		fmt.Fprintf(c.stdout, "no memory for %s\n", q.Workspace)
		return exitOK
	}
	for _, e := range entries {
		src := e.SourceSession
		if src == "" {
			src = "by hand"
		}
		fmt.Fprintf(c.stdout, "%d  %s  (%s, %s)\n", e.ID, oneLine(e.Text), src, e.CreatedAt.Local().Format("2006-01-02 15:04"))
	}
	return exitOK
}

type memoryOut struct {
	ID            int64     `json:"id"`
	Text          string    `json:"text"`
	User          string    `json:"user,omitempty"`
	SourceSession string    `json:"source_session,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
}
