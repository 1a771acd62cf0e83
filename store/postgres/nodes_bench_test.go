package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/pgtest"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// BenchmarkNodes measures turns per second for 1, 2 and 3 nodes on one
// PostgreSQL database: each node is an agent with its own connection pool
// and lease holder (in this process, as `talaria serve` nodes would be in
// theirs), running 16 sessions at once; every turn is a tool call and an
// answer against the scripted model server at 50 ms a call.
func BenchmarkNodes(b *testing.B) {
	srv := fakellm.New(fakellm.WithLatency(50 * time.Millisecond))
	b.Cleanup(srv.Close)
	srv.SetDefault(func(req fakellm.Request) fakellm.Step {
		if req.Messages[len(req.Messages)-1].Role == "user" {
			return fakellm.Calls(fakellm.ToolCall("noop", `{}`))
		}
		return fakellm.Text("done")
	})
	noop := testenv.MustFunc(tool.Info{Name: "noop", Description: "Does nothing.", Parameters: testenv.ObjectSchema(`{}`), ReadOnly: true},
		func(context.Context, json.RawMessage) (tool.Result, error) {
			return tool.Result{Content: "ok"}, nil
		})
	for _, nodes := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			dsn := pgtest.New(b)
			const perNode = 16
			type worker struct {
				ag   *agent.Agent
				sess string
			}
			var workers []worker
			for n := range nodes {
				st := openAt(b, dsn)
				ag, err := agent.New(agent.Config{
					Store:     st,
					Tools:     []tool.Tool{noop},
					Workspace: b.TempDir(),
					Holder:    fmt.Sprint("node-", n),
					Config:    turn.Config{Routes: []turn.Route{{Provider: testenv.Provider(srv, "openai", "p"), Model: "gpt-4.1"}}},
				})
				if err != nil {
					b.Fatal(err)
				}
				for range perNode {
					s, err := ag.NewSession(context.Background(), agent.SessionOptions{Title: "bench"})
					if err != nil {
						b.Fatal(err)
					}
					workers = append(workers, worker{ag, s.ID})
				}
			}
			var next atomic.Int64
			var failed atomic.Value
			time.Sleep(1100 * time.Millisecond) // let the setup's statistics arrive
			before := xactCommits(b, dsn)
			b.ResetTimer()
			var wg sync.WaitGroup
			for _, w := range workers {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						res, err := w.ag.RunTurn(context.Background(), w.sess, agent.Input{Text: "go"})
						if err != nil || res.Exit != turn.ExitCompleted {
							failed.Store(fmt.Errorf("turn: %s %v %+v", res.Exit, err, res.Failure))
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			if err, ok := failed.Load().(error); ok {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
			time.Sleep(1100 * time.Millisecond)
			b.ReportMetric(float64(xactCommits(b, dsn)-before)/float64(b.N), "xacts/turn")
		})
	}
}

// xactCommits is the database's committed transaction count so far.
func xactCommits(b *testing.B, dsn string) int64 {
	return serverCount(b, dsn, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`)
}

// serverCount runs query, which returns one number, on a connection of
// its own.
func serverCount(b *testing.B, dsn, query string) int64 {
	b.Helper()
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(context.Background())
	var n int64
	if err := c.QueryRow(context.Background(), query).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}
