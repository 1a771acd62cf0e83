package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/gateway/client"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// The gateway under load, measured, not timed: run with
//
//	go test -run '^$' -bench 'Gateway' -benchtime 1x ./gateway/
//
// TALARIA_BENCH_SESSIONS (default 1000) and TALARIA_BENCH_SUBSCRIBERS
// (default 1000) size them; figures are in BENCHMARKS.md.

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

type noopTool struct{}

func (noopTool) Info() tool.Info {
	return tool.Info{Name: "noop", Description: "does nothing", ReadOnly: true, Repeatable: true, Parameters: testenv.ObjectSchema(`{}`)}
}
func (noopTool) Run(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{Content: "ok"}, nil
}

// threeRounds answers a turn with two tool rounds and a final text.
func threeRounds(r fakellm.Request) fakellm.Step {
	tools := 0
	for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role != "user"; i-- {
		if r.Messages[i].Role == "tool" {
			tools++
		}
	}
	if tools < 2 {
		return fakellm.Calls(fakellm.ToolCall("noop", `{}`))
	}
	return fakellm.Text("done after three rounds")
}

func benchGateway(b *testing.B, latency time.Duration, cfg func(*Config)) (*testenv.Env, *Gateway, *httptest.Server, string) {
	env := testenv.New(b, testenv.Options{NoBuiltins: true, ExtraTools: []tool.Tool{noopTool{}},
		ServerOptions: []fakellm.Option{fakellm.WithLatency(latency)},
		Configure:     func(c *agent.Config) { c.AdmitWait = time.Minute }})
	env.Srv.SetDefault(threeRounds)
	c := Config{Store: env.Store, NewAgent: Template{Agent: env.Config}.NewAgent, AutoApprove: true}
	if cfg != nil {
		cfg(&c)
	}
	g, err := New(c)
	if err != nil {
		b.Fatal(err)
	}
	if err := g.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	b.Cleanup(func() {
		_ = g.Shutdown(context.Background(), time.Second)
		srv.Close()
	})
	tok, _, err := CreateToken(context.Background(), env.Store, "bench", "bench", "")
	if err != nil {
		b.Fatal(err)
	}
	return env, g, srv, tok
}

func benchClient(n int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxIdleConns: n}}
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

func rssKB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// BenchmarkGatewayTurns: N sessions each post one message at the same
// moment; each turn is three model calls of 50 ms (two tool rounds and an
// answer), streamed back over POST + text/event-stream.
//
// checks=off is the gateway without the per-principal checks (rate,
// streams, queued, sessions, fair scheduler, spend, model allow-list),
// checks=on with them (limits high enough never to refuse): the ratio of
// the two in one run is their cost.
func BenchmarkGatewayTurns(b *testing.B) {
	for _, checks := range []bool{false, true} {
		name := "checks=off"
		if checks {
			name = "checks=on"
		}
		b.Run(name, func(b *testing.B) { benchGatewayTurns(b, checks) })
	}
}

func benchGatewayTurns(b *testing.B, checks bool) {
	n := envInt("TALARIA_BENCH_SESSIONS", 1000)
	const model = 50 * time.Millisecond
	for range b.N {
		_, g, srv, tok := benchGateway(b, model, func(c *Config) {
			c.MaxConcurrentTurns = n
			c.unlimited = !checks
			c.Limits.Default = Limit{Turns: n, Queued: 2 * n, Sessions: 2 * n, Streams: 2 * n,
				RequestsPerSecond: 1e6, SpendUSDPerDay: 1e6}
		})
		cl := &client.Client{BaseURL: srv.URL, Token: tok, HTTP: benchClient(n)}
		ids := make([]string, n)
		for i := range ids {
			id, err := cl.CreateSession(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			ids[i] = id
		}
		runtime.GC()
		rss0 := rssKB()
		var (
			mu        sync.Mutex
			lat       []time.Duration
			failures  = map[string]int{}
			httpErrs  atomic.Int64
			wg        sync.WaitGroup
			peakTurns atomic.Int64
		)
		stopPeak := make(chan struct{})
		go func() {
			t := time.NewTicker(10 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stopPeak:
					return
				case <-t.C:
					g.mu.Lock()
					k := int64(0)
					for _, st := range g.sessions {
						if st.running != nil {
							k++
						}
					}
					g.mu.Unlock()
					if k > peakTurns.Load() {
						peakTurns.Store(k)
					}
				}
			}
		}()
		start := time.Now()
		for _, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t0 := time.Now()
				res, err := cl.RunTurn(context.Background(), id, "go", turn.Hooks{}, nil)
				d := time.Since(t0)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					httpErrs.Add(1)
					failures[err.Error()]++
					return
				}
				if res.Exit != "completed" {
					failures[string(res.Exit)+": "+res.Explanation]++
					return
				}
				lat = append(lat, d-3*model)
			}()
		}
		wg.Wait()
		wall := time.Since(start)
		close(stopPeak)
		rss1 := rssKB()
		b.ReportMetric(float64(len(lat))/wall.Seconds(), "turns/s")
		b.ReportMetric(float64(pct(lat, 0.5).Microseconds())/1000, "p50-overhead-ms")
		b.ReportMetric(float64(pct(lat, 0.99).Microseconds())/1000, "p99-overhead-ms")
		b.ReportMetric(float64(len(failures)), "failure-kinds")
		b.ReportMetric(float64(httpErrs.Load()), "http-errors")
		if p := peakTurns.Load(); p > 0 {
			b.ReportMetric(float64(rss1-rss0)/float64(p), "peak-RSS-KB/active-turn")
			b.ReportMetric(float64(p), "peak-active-turns")
		}
		b.Logf("%d sessions: %d completed in %s; peak RSS %d MB (+%d MB); failures %v", n, len(lat), wall.Round(time.Millisecond), rss1/1024, (rss1-rss0)/1024, failures)
	}
}

// BenchmarkSSEFanOut: M subscribers over HTTP on one session while one turn
// streams an answer; delivery latency is each subscriber's receive time
// minus the moment the gateway published the event (read by an in-process
// subscriber on the hub itself).
func BenchmarkSSEFanOut(b *testing.B) {
	m := envInt("TALARIA_BENCH_SUBSCRIBERS", 1000)
	for range b.N {
		env, g, srv, tok := benchGateway(b, 0, nil)
		cl := &client.Client{BaseURL: srv.URL, Token: tok, HTTP: benchClient(m)}
		sid, err := cl.CreateSession(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		env.Srv.SetDefault(func(fakellm.Request) fakellm.Step {
			return fakellm.Text(strings.Repeat("fan out to every subscriber ", 60)).WithChunkDelay(2 * time.Millisecond)
		})
		h, _ := g.hubs.get(context.Background(), sid)
		ref, _ := h.subscribe(h.lastID(), 1<<16)
		published := sync.Map{} // id -> time
		refDone := make(chan struct{})
		go func() {
			defer close(refDone)
			for ev := range ref.ch {
				published.Store(ev.ID, time.Now())
				if ev.Type == api.EventTurnFinished {
					return
				}
			}
		}()
		type rec struct {
			id int64
			at time.Time
		}
		recs := make([][]rec, m)
		var ready, wg sync.WaitGroup
		ctx, cancel := context.WithCancel(context.Background())
		for i := range m {
			ready.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/sessions/"+sid+"/events?after="+strconv.FormatInt(h.lastID(), 10), nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				resp, err := cl.HTTP.Do(req)
				ready.Done()
				if err != nil {
					return
				}
				defer resp.Body.Close()
				_ = client.ParseSSE(resp.Body, func(id int64, typ string, _ []byte) bool {
					recs[i] = append(recs[i], rec{id, time.Now()})
					return typ != string(api.EventTurnFinished)
				})
			}()
		}
		ready.Wait()
		for h.subscribers() < m+1 {
			time.Sleep(10 * time.Millisecond)
		}
		if err := cl.Do(context.Background(), "POST", "/v1/sessions/"+sid+"/messages", map[string]string{"text": "go"}, nil); err != nil {
			b.Fatal(err)
		}
		wg.Wait()
		cancel()
		<-refDone
		var lat []time.Duration
		events := 0
		for _, rs := range recs {
			for _, r := range rs {
				if t0, ok := published.Load(r.id); ok {
					lat = append(lat, r.at.Sub(t0.(time.Time)))
				}
			}
			events = max(events, len(rs))
		}
		b.ReportMetric(float64(events), "events/subscriber")
		b.ReportMetric(float64(pct(lat, 0.5).Microseconds())/1000, "p50-delivery-ms")
		b.ReportMetric(float64(pct(lat, 0.99).Microseconds())/1000, "p99-delivery-ms")
		b.Logf("%d subscribers, %d deliveries, p50 %s p99 %s max %s", m, len(lat), pct(lat, 0.5), pct(lat, 0.99), pct(lat, 1))
	}
}
