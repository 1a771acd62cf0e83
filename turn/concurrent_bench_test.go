package turn_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/bench/benchscript"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/openai"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// concurrentTurns is how many turns BenchmarkConcurrentTurns runs at once.
const concurrentTurns = 100

// BenchmarkConcurrentTurns runs 100 turns at once in one process against
// the scripted server answering each call after 20 ms, and counts the TCP
// connections the server accepted (a ConnState hook: with a real provider
// each is a TLS handshake) per 1,000 calls, and the process's CPU per turn.
// "pool=2" is the client the adapters had before (net/http's default of 2
// idle connections per host), "tuned" is llm.NewHTTPClient's pool: both in
// the same run, so their ratio is what to read. One op is 100 turns.
func BenchmarkConcurrentTurns(b *testing.B) {
	for _, bc := range []struct {
		name   string
		client func() *http.Client
	}{
		{"pool=2", func() *http.Client {
			return llm.NewHTTPClientWith(llm.Timeouts{}, http.DefaultTransport.(*http.Transport).Clone())
		}},
		{"tuned", func() *http.Client { return llm.NewHTTPClient(llm.Timeouts{}) }},
	} {
		b.Run(bc.name, func(b *testing.B) { benchConcurrent(b, bc.client()) })
	}
}

func benchConcurrent(b *testing.B, hc *http.Client) {
	var conns atomic.Int64
	var calls atomic.Int64
	var env *testenv.Env
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		env.Srv.ServeHTTP(w, r)
	}))
	hs.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	hs.Start()
	b.Cleanup(hs.Close)
	env = testenv.New(b, testenv.Options{ExtraTools: []tool.Tool{noopTool()}, Configure: func(c *agent.Config) {
		c.Routes[0].Provider = openai.NewChat(openai.Config{Name: "bench", BaseURL: hs.URL + "/v1", APIKey: "k", HTTPClient: hc})
	}})
	env.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
		return benchscript.Noop(r).WithLatency(20 * time.Millisecond)
	})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	for range b.N {
		b.StopTimer()
		ids := make([]string, concurrentTurns)
		for i := range ids {
			sess, err := env.Agent.NewSession(ctx, agent.SessionOptions{Title: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			ids[i] = sess.ID
		}
		env.Srv.Reset()
		b.StartTimer()
		c0 := cpuTime()
		var wg sync.WaitGroup
		errs := make(chan error, concurrentTurns)
		for _, id := range ids {
			wg.Go(func() {
				res, err := env.Agent.RunTurn(ctx, id, agent.Input{Text: "call noop ten times"})
				if err == nil && (res.Exit != turn.ExitCompleted || res.APICalls != benchscript.Rounds+1) {
					err = &benchError{&res}
				}
				if err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		cpu += cpuTime() - c0
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(conns.Load())*1000/float64(calls.Load()), "conns/1000calls")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*concurrentTurns), "cpu-ns/turn")
}

type benchError struct{ res *turn.Result }

func (e *benchError) Error() string {
	return "turn ended " + string(e.res.Exit)
}
