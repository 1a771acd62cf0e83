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
	"time"

	"github.com/talaria-agent/talaria/bench/benchscript"
	"github.com/talaria-agent/talaria/bench/internal/benchmain"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
)

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
	return &store.Message{TurnID: fmt.Sprint("t", i/4), Message: benchscript.SessionMessage(i), Provider: "custom", Model: "bench-model"}
}

func main() {
	db := flag.String("db", "", "database file to create (required)")
	n := flag.Int("messages", 10_000, "messages in the session")
	benchmain.Run("gensession", "-db FILE [-messages 10000]", []string{"db"},
		func() error { return generate(context.Background(), *db, *n) })
}
