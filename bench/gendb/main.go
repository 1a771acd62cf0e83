// Command gendb writes a SQLite database with many sessions of realistic
// transcript rows (user prompts, assistant tool calls, tool results,
// answers), for measuring search and load at scale:
//
//	go run ./bench/gendb -out /tmp/50k.db -messages 50000
//
// Every fourth row is an answer containing "the"; a few rows mention
// "kumquat", so both a common and a rare word can be searched.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
)

func main() {
	out := flag.String("out", "", "database file to create (must not exist)")
	n := flag.Int("messages", 50_000, "messages in all")
	per := flag.Int("per-session", 1_000, "messages per session")
	flag.Parse()
	if err := run(*out, *n, *per); err != nil {
		fmt.Fprintln(os.Stderr, "gendb:", err)
		os.Exit(1)
	}
}

func run(path string, n, per int) error {
	if path == "" || per <= 0 {
		return fmt.Errorf("-out and a positive -per-session are required")
	}
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%s exists", path)
	}
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	batch := make([]*store.Message, 0, 500)
	for done := 0; done < n; {
		sess := &store.Session{Title: fmt.Sprintf("generated %d", done/per)}
		if err := s.CreateSession(ctx, sess); err != nil {
			return err
		}
		for i := 0; i < per && done < n; i++ {
			batch = append(batch, Row(done))
			done++
			if len(batch) == cap(batch) || i == per-1 || done == n {
				if err := s.Append(ctx, store.Fence{SessionID: sess.ID}, batch...); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
	}
	return nil
}

// Row is the i-th generated transcript row.
func Row(i int) *store.Message {
	switch i % 4 {
	case 0:
		txt := fmt.Sprintf("Please look at file %d and fix the bug in it.", i)
		if i%1000 == 0 {
			txt += " Also peel the kumquat."
		}
		return &store.Message{TurnID: "t", Message: llm.NewText(llm.RoleUser, txt)}
	case 1:
		return &store.Message{TurnID: "t", Message: llm.Message{Role: llm.RoleAssistant,
			ToolCalls: []llm.ToolCall{{ID: fmt.Sprint("call_", i), Name: "read_file", Arguments: fmt.Sprintf(`{"path":"src/f%d.go"}`, i)}}},
			FinishReason: llm.FinishToolCalls, Usage: llm.Usage{InputTokens: 1000, OutputTokens: 40, Reported: true}}
	case 2:
		return &store.Message{TurnID: "t", Message: llm.NewToolResult(llm.ToolCall{ID: fmt.Sprint("call_", i-1), Name: "read_file"},
			fmt.Sprintf("package f\n\nfunc F%d() int {\n\treturn %d\n}\n", i, i), false)}
	default:
		return &store.Message{TurnID: "t", Message: llm.NewText(llm.RoleAssistant, "Fixed: the function now returns the right value."),
			FinishReason: llm.FinishStop}
	}
}
