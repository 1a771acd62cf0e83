package turn_test

import (
	"context"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/bench/benchscript"
	"github.com/talaria-agent/talaria/internal/testing/pgtest"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/anthropic"
	"github.com/talaria-agent/talaria/llm/gemini"
	"github.com/talaria-agent/talaria/llm/openai"
	"github.com/talaria-agent/talaria/observe"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/postgres"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// noopTool is a trivial read-only tool, so the benchmark measures the
// engine, not a tool.
func noopTool() tool.Tool {
	return testenv.MustFunc(tool.Info{
		Name:        "noop",
		Description: "Does nothing and says so.",
		Parameters:  testenv.ObjectSchema(`{"i":{"type":"integer"}}`, "i"),
		ReadOnly:    true,
	},
		func(_ context.Context, args json.RawMessage) (tool.Result, error) {
			return tool.Result{Content: "ok " + string(args)}, nil
		})
}

// BenchmarkRoundTrip measures engine overhead per API round trip: a turn of
// benchscript.Rounds tool rounds against the scripted server at zero
// latency, over real HTTP through the real SDK adapter, with every row
// written durably to SQLite (WAL, synchronous=normal) as the design
// requires. Built-in tools are registered too, so each request carries
// their schemas. One op is a whole turn; read ns/roundtrip.
//
// By default the scripted server runs in this process, so its work counts
// in cpu-ns/roundtrip. With TALARIA_BENCH_URL set to a running
// `bench/fakellm-server -script noop`, the turns go there instead and the
// CPU figure is the engine's (and its HTTP client's) alone.
//
// TALARIA_BENCH_STORE=postgres runs the same turns on store/postgres (the
// server at TALARIA_TEST_POSTGRES_URL, or a throwaway local cluster).
func BenchmarkRoundTrip(b *testing.B) {
	db := benchDatabase(b)
	for _, api := range testenv.APIs {
		b.Run(api, func(b *testing.B) { benchTurns(b, api, 0, db, nil) })
	}
}

// BenchmarkRoundTripTelemetry is BenchmarkRoundTrip with telemetry off
// (no observer: the engine builds no events) and on (the OpenTelemetry
// observer with every span and metric kept by in-memory exporters, full
// capture, so the cost of building spans, attributes and captured content
// is all counted; no network).
func BenchmarkRoundTripTelemetry(b *testing.B) {
	b.Run("off", func(b *testing.B) { benchTurns(b, "openai", 0, "", nil) })
	b.Run("on", func(b *testing.B) {
		spans := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		obs, err := observe.New(observe.Options{TracerProvider: tp, MeterProvider: mp, Capture: observe.CaptureFull})
		if err != nil {
			b.Fatal(err)
		}
		benchTurns(b, "openai", 0, "", obs)
		if len(spans.GetSpans()) == 0 {
			b.Fatal("no spans recorded")
		}
	})
}

// BenchmarkToolLedger is BenchmarkRoundTrip (openai) with the tool-call
// ledger off and on, in one run: each of the 10 noop calls costs two more
// durable writes when on (started before it runs, finished after its
// result). TALARIA_BENCH_STORE=postgres runs it on store/postgres.
func BenchmarkToolLedger(b *testing.B) {
	db := benchDatabase(b)
	b.Run("off", func(b *testing.B) { benchTurnsLedger(b, "openai", 0, db, nil, false) })
	b.Run("on", func(b *testing.B) { benchTurnsLedger(b, "openai", 0, db, nil, true) })
}

// noLedger hides a store's ToolLedger methods from the engine.
type noLedger struct{ store.Store }

// BenchmarkRoundTripLongSession is BenchmarkRoundTrip on a session that
// already holds 1,000 messages: every request carries them, and the engine
// projects the whole transcript each iteration.
func BenchmarkRoundTripLongSession(b *testing.B) {
	db := benchDatabase(b)
	for _, api := range testenv.APIs {
		b.Run(api, func(b *testing.B) { benchTurns(b, api, 1000, db, nil) })
	}
}

// benchDatabase returns the PostgreSQL server to run on when
// TALARIA_BENCH_STORE=postgres, "" for SQLite.
func benchDatabase(b *testing.B) string {
	switch os.Getenv("TALARIA_BENCH_STORE") {
	case "", "sqlite":
		return ""
	case "postgres":
		if u := os.Getenv(pgtest.EnvURL); u != "" {
			return u
		}
		return pgtest.StartOwn(b).URL()
	}
	b.Fatalf("TALARIA_BENCH_STORE=%q: use sqlite or postgres", os.Getenv("TALARIA_BENCH_STORE"))
	return ""
}

func benchTurns(b *testing.B, api string, prior int, pgBase string, obs turn.Observer) {
	benchTurnsLedger(b, api, prior, pgBase, obs, true)
}

// benchTurnsLedger is benchTurns with the tool-call ledger on or off (the
// store seen through an interface that hides it).
func benchTurnsLedger(b *testing.B, api string, prior int, pgBase string, obs turn.Observer, ledger bool) {
	external := os.Getenv("TALARIA_BENCH_URL")
	var st store.Store
	if pgBase != "" {
		pg, err := postgres.Open(context.Background(), pgtest.NewOn(b, pgBase), postgres.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = pg.Close() })
		st = pg
	}
	env := testenv.New(b, testenv.Options{API: api, Model: "gpt-4.1", ExtraTools: []tool.Tool{noopTool()}, Configure: func(c *agent.Config) {
		c.Observer = obs
		if st != nil {
			c.Store = st
		}
		if !ledger {
			c.Store = noLedger{c.Store.(store.Store)}
		}
		if external == "" {
			return
		}
		r := &c.Routes[0]
		switch api {
		case "anthropic":
			r.Provider = anthropic.New(anthropic.Config{Name: "bench", BaseURL: external, APIKey: "k"})
		case "gemini":
			g, err := gemini.New(gemini.Config{Name: "bench", BaseURL: external, APIKey: "k"})
			if err != nil {
				b.Fatal(err)
			}
			r.Provider = g
		case "openai-responses":
			r.Provider = openai.NewResponses(openai.Config{Name: "bench", BaseURL: external + "/v1", APIKey: "k"})
		default:
			r.Provider = openai.NewChat(openai.Config{Name: "bench", BaseURL: external + "/v1", APIKey: "k"})
		}
	}})
	if st == nil {
		st = env.Store
	}
	env.Srv.SetDefault(benchscript.Noop)
	ctx := context.Background()
	history := priorRows(prior)

	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	for range b.N {
		b.StopTimer()
		// A fresh session per turn keeps every op the same size.
		sess, err := env.Agent.NewSession(ctx, agent.SessionOptions{Title: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		if len(history) > 0 {
			if err := st.Append(ctx, store.Fence{SessionID: sess.ID}, cloneRows(history)...); err != nil {
				b.Fatal(err)
			}
		}
		env.Srv.Reset() // the recorded requests would grow without bound
		b.StartTimer()

		c0 := cpuTime()
		res, err := env.Agent.RunTurn(ctx, sess.ID, agent.Input{Text: "call noop ten times"})
		cpu += cpuTime() - c0
		if err != nil || res.Exit != turn.ExitCompleted || res.APICalls != benchscript.Rounds+1 {
			b.Fatalf("turn: exit %s, %d calls, err %v, failure %+v", res.Exit, res.APICalls, err, res.Failure)
		}
	}
	trips := float64(b.N * (benchscript.Rounds + 1))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/trips, "ns/roundtrip")
	// CPU of this whole process (GC included).
	b.ReportMetric(float64(cpu.Nanoseconds())/trips, "cpu-ns/roundtrip")
}

// priorRows is an earlier conversation of n messages in the rhythm of real
// work: a request, a tool call, its ~1 KB result, an answer.
func priorRows(n int) []store.Message {
	rows := make([]store.Message, 0, n)
	result := strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) { /* ... */ }\n", 15)
	for i := 0; len(rows) < n; i++ {
		call := llm.ToolCall{ID: fmt.Sprintf("old_%d", i), Name: "read_file", Arguments: fmt.Sprintf(`{"path":"f%d.go"}`, i)}
		asst := llm.NewText(llm.RoleAssistant, "Let me look at that file.")
		asst.ToolCalls = []llm.ToolCall{call}
		for _, m := range []llm.Message{
			llm.NewText(llm.RoleUser, fmt.Sprintf("What does f%d.go do?", i)),
			asst,
			llm.NewToolResult(call, result, false),
			llm.NewText(llm.RoleAssistant, "It defines an HTTP handler that does nothing yet."),
		} {
			if len(rows) < n {
				rows = append(rows, store.Message{Message: m})
			}
		}
	}
	// End on a finished exchange, so the new turn's user message follows an
	// answer.
	for len(rows) > 0 && rows[len(rows)-1].Role != llm.RoleAssistant {
		rows = rows[:len(rows)-1]
	}
	return rows
}

// cloneRows gives Append fresh values (it assigns their IDs and seqs).
func cloneRows(rows []store.Message) []*store.Message {
	out := make([]*store.Message, len(rows))
	for i := range rows {
		r := rows[i]
		out[i] = &r
	}
	return out
}
