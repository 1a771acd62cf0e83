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

	"github.com/talaria-agent/talaria/bench/internal/benchmain"
	"github.com/talaria-agent/talaria/internal/testing/transcriptgen"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
)

func run(path string, n, per int) error {
	if per <= 0 {
		return fmt.Errorf("-per-session must be positive")
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

// Row is the i-th generated transcript row; every thousandth mentions
// "kumquat".
func Row(i int) *store.Message {
	m := transcriptgen.Row(i)
	if i%1000 == 0 {
		m.Content = []llm.Part{llm.TextPart(m.Text() + " Also peel the kumquat.")}
	}
	return m
}

func main() {
	out := flag.String("out", "", "database file to create (must not exist)")
	n := flag.Int("messages", 50_000, "messages in all")
	per := flag.Int("per-session", 1_000, "messages per session")
	benchmain.Run("gendb", "-out FILE [-messages 50000] [-per-session 1000]", []string{"out"},
		func() error { return run(*out, *n, *per) })
}
