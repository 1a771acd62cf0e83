//go:build unix

package multinode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/talaria-agent/talaria/gateway/client"
	"github.com/talaria-agent/talaria/turn"
)

// BenchmarkNodes measures turns per second through 1, 2 and 3 serve nodes
// on one PostgreSQL database, the model answering each call after 50 ms
// (a tool call, then the answer: two calls a turn). Clients, one session
// each, send turns one after another to random nodes and read each turn's
// stream to its end. Run it with a fixed count, as it starts the nodes
// once per sub-benchmark:
//
//	go test ./internal/testing/multinode -run '^$' -bench Nodes -benchtime 600x
func BenchmarkNodes(b *testing.B) {
	const clients = 48
	for _, nodes := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			c := newCluster(b, nodes, time.Minute, toolThenAnswer(50*time.Millisecond))
			ctx := b.Context()
			sids := make([]string, clients)
			for i := range sids {
				id, err := c.newSession(ctx, c.nodes[i%nodes])
				if err != nil {
					b.Fatal(err)
				}
				sids[i] = id
			}
			xacts0 := c.committed(b)
			var left atomic.Int64
			left.Store(int64(b.N))
			var failed atomic.Int64
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for i := range clients {
				wg.Go(func() {
					for k := 0; left.Add(-1) >= 0; k++ {
						nd := c.nodes[(i+k)%nodes]
						res, err := c.streamTurn(ctx, nd, sids[i], fmt.Sprintf("p-%d-%d", i, k))
						if err != nil || res.Exit != turn.ExitCompleted {
							failed.Add(1)
						}
					}
				})
			}
			wg.Wait()
			el := time.Since(start)
			b.StopTimer()
			if f := failed.Load(); f > 0 {
				b.Fatalf("%d of %d turns failed", f, b.N)
			}
			b.ReportMetric(float64(b.N)/el.Seconds(), "turns/s")
			time.Sleep(1500 * time.Millisecond) // PostgreSQL flushes its statistics every second
			b.ReportMetric(float64(c.committed(b)-xacts0)/float64(b.N), "xacts/turn")
			b.ReportMetric(float64(c.count(b, "stream_events"))/float64(b.N), "events/turn")
		})
	}
}

// committed is the database's committed transactions so far (every node's,
// the notifications' included).
func (c *cluster) committed(b *testing.B) int64 {
	var n int64
	c.query(b, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`, &n)
	return n
}

func (c *cluster) count(b *testing.B, table string) int64 {
	var n int64
	c.query(b, `SELECT count(*) FROM `+table, &n)
	return n
}

func (c *cluster) query(b *testing.B, sql string, dst any) {
	b.Helper()
	conn, err := pgx.Connect(context.Background(), c.dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(context.Background(), sql).Scan(dst); err != nil {
		b.Fatal(err)
	}
}

// streamTurn posts a message with Accept: text/event-stream and reads the
// turn's events to its turn_finished.
func (c *cluster) streamTurn(ctx context.Context, nd *node, sid, text string) (turn.Result, error) {
	body, _ := json.Marshal(map[string]any{"text": text})
	req, err := http.NewRequestWithContext(ctx, "POST", nd.url+"v1/sessions/"+sid+"/messages", bytes.NewReader(body))
	if err != nil {
		return turn.Result{}, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return turn.Result{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return turn.Result{}, fmt.Errorf("node %d: %s", nd.i, resp.Status)
	}
	var res turn.Result
	err = client.ParseSSE(bufio.NewReader(resp.Body), func(_ int64, typ string, data []byte) bool {
		if typ != "turn_finished" {
			return true
		}
		var d struct {
			Result turn.Result `json:"result"`
		}
		_ = json.Unmarshal(data, &d)
		res = d.Result
		return false
	})
	return res, err
}
