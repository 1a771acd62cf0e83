package turn_test

import (
	"context"
	"iter"
	"net/http/httptrace"
	"sync/atomic"
	"testing"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/bench/benchscript"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/tool"
)

// connCounter wraps a provider and counts, per call, whether the HTTP
// client got a fresh connection or reused a pooled one.
type connCounter struct {
	llm.Provider
	fresh, reused *atomic.Int64
}

func (p connCounter) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) {
		if ci.Reused {
			p.reused.Add(1)
		} else {
			p.fresh.Add(1)
		}
	}})
	return p.Provider.Stream(ctx, req)
}

// Consecutive calls reuse one connection: a stream that is read to its end
// leaves the connection in the pool, so only the first call of a process
// pays the TCP (with a real provider, TLS) handshake.
func TestCallsReuseTheConnection(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			var fresh, reused atomic.Int64
			env := testenv.New(t, testenv.Options{API: api, ExtraTools: []tool.Tool{noopTool()}, Configure: func(c *agent.Config) {
				c.Routes[0].Provider = connCounter{c.Routes[0].Provider, &fresh, &reused}
			}})
			env.Srv.SetDefault(benchscript.Noop)
			const turns = 3
			for range turns {
				sess, err := env.Agent.NewSession(context.Background(), agent.SessionOptions{Title: "reuse"})
				if err != nil {
					t.Fatal(err)
				}
				res, err := env.Agent.RunTurn(context.Background(), sess.ID, agent.Input{Text: "go"})
				if err != nil || res.APICalls != benchscript.Rounds+1 {
					t.Fatalf("turn: %v, %+v", err, res)
				}
			}
			if fresh.Load() != 1 || reused.Load() != turns*(benchscript.Rounds+1)-1 {
				t.Errorf("%d fresh and %d reused connections; want 1 fresh, the rest reused", fresh.Load(), reused.Load())
			}
			env.NoViolations()
		})
	}
}
