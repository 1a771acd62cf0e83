package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/store"
)

const memoryUsage = `Usage:
  talaria memory list [--json]          the workspace's memory entries
  talaria memory add "TEXT"             keep a fact for future sessions
  talaria memory rm ID                  remove an entry
  talaria memory clear                  remove every entry of the workspace (and user)

Flags: --workspace DIR (default: the current directory), --user NAME (memory.user in the config).
New sessions start with the memory in their system prompt; a running session keeps the prompt it started with.
`

func (c *cli) memoryCmd(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, memoryUsage)
		return exitUsage
	}
	sub, rest := args[0], args[1:]
	fs := flag.NewFlagSet("memory "+sub, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	jsonOut := fs.Bool("json", false, "print JSON")
	ws := fs.String("workspace", "", "the workspace whose memory to use (default: the current directory)")
	user := fs.String("user", "", "the user whose memory to use besides the shared one (default: memory.user)")
	var dbFlag string
	databaseFlag(fs, &dbFlag)
	if err := fs.Parse(interleaved(rest)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	pos := fs.Args()
	cfg, err := c.loadConfig()
	if err != nil {
		return c.fail(exitUsage, "%v", err)
	}
	dir := *ws
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return c.fail(exitOther, "%v", err)
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return c.fail(exitUsage, "workspace: %v", err)
	}
	q := store.MemoryQuery{Workspace: dir, User: cfg.Memory.User}
	if *user != "" {
		q.User = *user
	}
	st, err := openStore(ctx, cfg, dbFlag, c.logger(cfg, false))
	if err != nil {
		return c.fail(exitOther, "%v", err)
	}
	defer st.Close()

	switch sub {
	case "list", "ls":
		entries, err := st.Memories(ctx, q)
		if err != nil {
			return c.fail(exitOther, "%v", err)
		}
		if *jsonOut {
			out := make([]memoryOut, len(entries))
			for i, e := range entries {
				out[i] = memoryOut{ID: e.ID, Text: e.Text, User: e.User, SourceSession: e.SourceSession, CreatedAt: e.CreatedAt}
			}
			return c.printJSON(out)
		}
		if len(entries) == 0 {
			fmt.Fprintf(c.stdout, "no memory for %s\n", dir)
			return exitOK
		}
		for _, e := range entries {
			src := e.SourceSession
			if src == "" {
				src = "by hand"
			}
			fmt.Fprintf(c.stdout, "%d  %s  (%s, %s)\n", e.ID, oneLine(e.Text), src, e.CreatedAt.Local().Format("2006-01-02 15:04"))
		}
	case "add":
		text := strings.TrimSpace(strings.Join(pos, " "))
		if text == "" {
			return c.fail(exitUsage, "memory add needs the text to keep\n%s", memoryUsage)
		}
		e := store.MemoryEntry{Workspace: dir, User: q.User, Text: text}
		if err := st.AddMemory(ctx, &e); err != nil {
			return c.fail(exitOther, "%v", err)
		}
		if *jsonOut {
			return c.printJSON(memoryOut{ID: e.ID, Text: e.Text, User: e.User, CreatedAt: e.CreatedAt})
		}
		fmt.Fprintf(c.stdout, "remembered as entry %d\n", e.ID)
	case "rm", "remove", "delete":
		if len(pos) != 1 {
			return c.fail(exitUsage, "memory rm needs one entry id (talaria memory list shows them)")
		}
		id, err := strconv.ParseInt(pos[0], 10, 64)
		if err != nil {
			return c.fail(exitUsage, "memory rm: %q is not an entry id", pos[0])
		}
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
	default:
		return c.fail(exitUsage, "unknown memory command %q\n%s", sub, memoryUsage)
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
