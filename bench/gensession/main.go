// Command gensession writes a SQLite state database holding one session of
// N messages in the rhythm of real tool-using work (a request, a tool call,
// its ~1.2 KB result, an answer), for measuring `talaria run -c` on long
// sessions:
//
//	go run ./bench/gensession -db $TALARIA_HOME/state.db -messages 50000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
)

func main() {
	db := flag.String("db", "", "database file to create (required)")
	n := flag.Int("messages", 10_000, "messages in the session")
	flag.Parse()
	if *db == "" {
		fmt.Fprintln(os.Stderr, "gensession: -db is required")
		os.Exit(2)
	}
	if err := generate(context.Background(), *db, *n); err != nil {
		fmt.Fprintln(os.Stderr, "gensession:", err)
		os.Exit(1)
	}
}

func generate(ctx context.Context, path string, n int) error {
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	sess := &store.Session{ID: fmt.Sprintf("long-%d", n), Title: "long session", SystemPrompt: "You are a careful coding agent."}
	if err := st.CreateSession(ctx, sess); err != nil {
		return err
	}
	l, err := st.AcquireLease(ctx, sess.ID, "gensession", time.Hour)
	if err != nil {
		return err
	}
	defer st.ReleaseLease(ctx, l)
	batch := make([]*store.Message, 0, 1000)
	for i := range n {
		batch = append(batch, row(i))
		if len(batch) == cap(batch) || i == n-1 {
			if err := st.Append(ctx, l.Fence(), batch...); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return nil
}

// row is message i of the session.
func row(i int) *store.Message {
	turn := fmt.Sprint("t", i/4)
	id := fmt.Sprint("call_", i/4)
	var m llm.Message
	switch i % 4 {
	case 0:
		m = llm.NewText(llm.RoleUser, fmt.Sprintf("Please look at internal/pkg%d/file.go and fix the off-by-one in the loop.", i))
	case 1:
		m = llm.NewText(llm.RoleAssistant, "Let me read the file first.")
		m.ToolCalls = []llm.ToolCall{{ID: id, Name: "read_file", Arguments: fmt.Sprintf(`{"path":"internal/pkg%d/file.go"}`, i)}}
	case 2:
		body := strings.Repeat("func F(xs []int) int {\n\tn := 0\n\tfor i := 0; i <= len(xs); i++ {\n\t\tn += xs[i]\n\t}\n\treturn n\n}\n", 16)
		m = llm.NewToolResult(llm.ToolCall{ID: id, Name: "read_file"}, body, false)
	default:
		m = llm.NewText(llm.RoleAssistant, "Fixed: the loop ran one step past the end of the slice; it now stops at len(xs)-1.")
	}
	return &store.Message{TurnID: turn, Message: m, Provider: "custom", Model: "bench-model"}
}
