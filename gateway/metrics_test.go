package gateway

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/catalogue"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/telemetrytest"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/observe"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

func (h *harness) metrics(t *testing.T) string {
	t.Helper()
	req, _ := http.NewRequest("GET", h.srv.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+h.admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics = %d %s", resp.StatusCode, b)
	}
	return string(b)
}

// The answering model of the scripted turn: a dated name only the
// catalogue prices, including its cache reads.
const answeredBy = "fb-model-2026-01-01"

// recoveriesOptions is a gateway whose primary route can overflow its
// context (compression), with a fallback route and priced models.
func recoveriesOptions(configure func(*Config)) harnessOptions {
	return harnessOptions{configure: configure, envOpts: testenv.Options{NoBuiltins: true, Fallbacks: []string{"fb-model"},
		Configure: func(c *agent.Config) {
			testenv.WithContext(testenv.ContextOptions{Window: 100_000})(c)
			c.Catalogue = catalogue.New(map[string]catalogue.Model{
				"test-model": {Window: 100_000, MaxOutput: 1024},
				answeredBy:   {Window: 100_000, MaxOutput: 1024, InputPerMTok: 1, OutputPerMTok: 2, CacheReadPerMTok: 0.5},
			})
		}}}
}

// recoveriesTurn runs one turn over HTTP that goes through every recovery:
// a context overflow (compression), an overload (retry), an empty answer
// (guard), a tool round, a refused key (fallback), and the fallback's
// answer with cache reads. It returns the turn's result.
func recoveriesTurn(t *testing.T, h *harness) map[string]any {
	t.Helper()
	sid := h.session(h.token)
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 40)
	var rows []*store.Message
	for i := range 20 {
		rows = append(rows, &store.Message{Message: llm.NewText(llm.RoleUser, fmt.Sprintf("question %d: %s", i, filler))},
			&store.Message{Message: llm.NewText(llm.RoleAssistant, fmt.Sprintf("answer %d: %s", i, filler))})
	}
	if err := h.env.Store.Append(context.Background(), store.Fence{SessionID: sid}, rows...); err != nil {
		t.Fatal(err)
	}
	h.gate.open()
	final := fakellm.Text("All done.")
	final.Usage = &fakellm.Usage{Input: 1000, Output: 500, CacheRead: 200}
	final.Model = answeredBy
	h.env.Srv.ScriptModel("test-model",
		fakellm.HTTPError(400, "invalid_request_error", "This model's maximum context length is 4096 tokens. However, your messages resulted in 9000 tokens."),
		fakellm.RawError(503, `{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","param":null,"code":null}}`),
		fakellm.Empty(),
		fakellm.Calls(fakellm.ToolCall("wait_gate", `{}`)),
		fakellm.RawError(401, `{"error":{"message":"Incorrect API key provided: sk-proj-****abcd.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`),
	)
	h.env.Srv.ScriptModel(testenv.SummaryModel, fakellm.Text("## Task\nsummary of the earlier work"))
	h.env.Srv.ScriptModel("fb-model", final)
	s := h.open(h.token, sid, 0)
	evs := s.until(t, 20*time.Second, finished(h.send(h.token, sid, "go")))
	res := resultOf(t, evs[len(evs)-1])
	if res["exit"] != "completed" || res["final_text"] != "All done." {
		t.Fatalf("turn result %v\nevents: %s", res, types(evs))
	}
	return res
}

// sample is one expected value, named as OTLP and as Prometheus name it.
type sample struct {
	otlp, prom string
	attrs      map[string]string // OTLP attribute names; Prometheus labels replace dots with _
	want       float64
	count      bool // compare a histogram's count instead of its sum
}

func (s sample) labels() map[string]string {
	l := map[string]string{}
	for k, v := range s.attrs {
		l[strings.ReplaceAll(k, ".", "_")] = v
	}
	return l
}

func recoverySamples(cost float64) []sample {
	return []sample{
		{otlp: "talaria.turns", prom: "talaria_turns_total", attrs: map[string]string{"talaria.exit": "completed"}, want: 1},
		{otlp: "talaria.turn.duration", prom: "talaria_turn_duration_seconds", attrs: map[string]string{"talaria.exit": "completed"}, want: 1, count: true},
		{otlp: "talaria.retries", prom: "talaria_retries_total", attrs: map[string]string{"error.type": "overloaded"}, want: 1},
		{otlp: "talaria.fallbacks", prom: "talaria_fallbacks_total", attrs: map[string]string{"talaria.fallback.to": "fallback/fb-model", "error.type": "auth"}, want: 1},
		{otlp: "talaria.compressions", prom: "talaria_compressions_total", attrs: map[string]string{"talaria.compression.outcome": "compressed"}, want: 1},
		{otlp: "talaria.guard.firings", prom: "talaria_guard_firings_total", attrs: map[string]string{"talaria.guard": "empty_response", "talaria.guard.action": "retry"}, want: 1},
		{otlp: "talaria.tool.calls", prom: "talaria_tool_calls_total", attrs: map[string]string{"gen_ai.tool.name": "wait_gate"}, want: 1},
		{otlp: "gen_ai.client.token.usage", prom: "gen_ai_client_token_usage", attrs: map[string]string{"gen_ai.response.model": answeredBy, "gen_ai.token.type": "output"}, want: 500},
		{otlp: "gen_ai.client.token.usage", prom: "gen_ai_client_token_usage", attrs: map[string]string{"gen_ai.response.model": answeredBy, "gen_ai.token.type": "input"}, want: 1200},
		{otlp: "talaria.cache.tokens", prom: "talaria_cache_tokens_total", attrs: map[string]string{"gen_ai.response.model": answeredBy, "talaria.cache.kind": "read"}, want: 200},
		{otlp: "talaria.cost.usd", prom: "talaria_cost_usd_total", attrs: map[string]string{"gen_ai.response.model": answeredBy, "gen_ai.provider.name": "fallback"}, want: cost},
		{otlp: "talaria.calls", prom: "talaria_calls_total", attrs: map[string]string{"talaria.pricing": "priced"}, want: 1},
		// One duration point per attempt: three failed, three answered.
		{otlp: "gen_ai.client.operation.duration", prom: "gen_ai_client_operation_duration_seconds", want: 6, count: true},
		{otlp: "gen_ai.client.operation.duration", prom: "gen_ai_client_operation_duration_seconds", attrs: map[string]string{"error.type": "overloaded", "gen_ai.request.model": "test-model"}, want: 1, count: true},
		{otlp: "http.server.request.duration", prom: "http_server_request_duration_seconds",
			attrs: map[string]string{"http.route": "POST /v1/sessions/{id}/messages", "http.response.status_code": "202"}, want: 1, count: true},
		{otlp: "talaria.active_turns", prom: "talaria_active_turns", want: 0},
		{otlp: "talaria.queued_messages", prom: "talaria_queued_messages", want: 0},
	}
}

func near(got, want float64) bool { return math.Abs(got-want) <= 1e-9+math.Abs(want)*1e-6 }

// TestMetricsAfterAScriptedTurn: a real turn over HTTP with a retry, a
// fallback, a compression, a guard firing and a tool call shows up in
// /metrics with its values: the instruments package observe records into,
// read by the Prometheus exporter.
func TestMetricsAfterAScriptedTurn(t *testing.T) {
	h := newHarness(t, recoveriesOptions(nil))
	res := recoveriesTurn(t, h)
	// 1000 uncached input at $1/M, 200 cache reads at $0.5/M, 500 output
	// at $2/M: priced with the model that answered, cache reads included.
	const cost = 0.001 + 0.0001 + 0.001
	if got, _ := res["cost_usd"].(float64); !near(got, cost) {
		t.Fatalf("turn cost %v, want %v", res["cost_usd"], cost)
	}
	text := h.metrics(t)
	scrape := telemetrytest.ParseProm(t, text)
	for _, s := range recoverySamples(cost) {
		t.Run(s.prom, func(t *testing.T) {
			sum, n, found := scrape.Value(s.prom, s.labels())
			got := sum
			if s.count {
				got = float64(n)
			}
			if !found || !near(got, s.want) {
				t.Errorf("%s%v = %v (found %v), want %v", s.prom, s.labels(), got, found, s.want)
			}
		})
	}
	for _, gone := range []string{"talaria_api_calls_total", "talaria_tokens_total"} {
		if _, ok := scrape[gone]; ok {
			t.Errorf("/metrics still serves the gateway's old %s", gone)
		}
	}
	if _, ok := scrape["go_goroutines"]; !ok {
		t.Error("/metrics lacks the Go collector")
	}
	if t.Failed() {
		for _, l := range strings.Split(text, "\n") {
			if !strings.HasPrefix(l, "#") && !strings.Contains(l, "_bucket") && !strings.HasPrefix(l, "go_") && !strings.HasPrefix(l, "process_") {
				t.Log(l)
			}
		}
	}
}

// TestMetricsGaugesAndRefusals: the gateway's own instruments (running
// turns, event streams, refused requests) are on the same /metrics.
func TestMetricsGaugesAndRefusals(t *testing.T) {
	h := newHarness(t, harnessOptions{configure: func(c *Config) { c.Busy = BusyReject }})
	sid := h.session(h.token)
	s := h.open(h.token, sid, 0)
	h.env.Srv.ScriptModel("test-model", fakellm.Calls(fakellm.ToolCall("wait_gate", `{}`)), fakellm.Text("done"))
	t1 := h.send(h.token, sid, "hold")
	s.until(t, 10*time.Second, func(ev sseEvent) bool { return ev.Type == "tool_started" })
	if code, _ := h.do("POST", "/v1/sessions/"+sid+"/messages", h.token, map[string]any{"text": "again"}); code != http.StatusConflict {
		t.Fatalf("second message while busy = %d, want 409", code)
	}
	scrape := telemetrytest.ParseProm(t, h.metrics(t))
	for name, want := range map[string]float64{"talaria_active_turns": 1, "talaria_sse_subscribers": 1} {
		if got, _, _ := scrape.Value(name, nil); got != want {
			t.Errorf("while the turn runs: %s = %v, want %v", name, got, want)
		}
	}
	if _, n, _ := scrape.Value("http_server_request_duration_seconds", map[string]string{"http_route": "POST /v1/sessions/{id}/messages", "http_response_status_code": "409"}); n != 1 {
		t.Errorf("409 busy answers counted %d, want 1", n)
	}
	h.gate.open()
	s.until(t, 10*time.Second, finished(t1))
	scrape = telemetrytest.ParseProm(t, h.metrics(t))
	if got, _, _ := scrape.Value("talaria_active_turns", nil); got != 0 {
		t.Errorf("after the turn: talaria_active_turns = %v", got)
	}
	if got, _, _ := scrape.Value("talaria_turns_total", map[string]string{"talaria_exit": "completed"}); got != 1 {
		t.Errorf("talaria_turns_total = %v, want 1", got)
	}
}

// TestMetricsSameInOTLPAndPrometheus: with telemetry export configured the
// gateway's /metrics is a second reader of the same MeterProvider; one
// scripted turn shows the same values in both views, recorded once.
func TestMetricsSameInOTLPAndPrometheus(t *testing.T) {
	r := telemetrytest.NewReceiver(t)
	reader := observe.NewPromReader()
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.URL}
	tel, err := observe.Setup(context.Background(), observe.Settings{Readers: []sdkmetric.Reader{reader}}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	m, err := SharedMetrics(reader, tel)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, recoveriesOptions(func(c *Config) {
		c.Observer = tel.Observer
		c.Metrics = m
	}))
	res := recoveriesTurn(t, h)
	cost, _ := res["cost_usd"].(float64)
	scrape := telemetrytest.ParseProm(t, h.metrics(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tel.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	ms := r.Metrics()
	for _, s := range recoverySamples(cost) {
		t.Run(s.otlp, func(t *testing.T) {
			osum, on, ofound := telemetrytest.MetricValue(ms, s.otlp, s.attrs)
			psum, pn, pfound := scrape.Value(s.prom, s.labels())
			ogot, pgot := osum, psum
			if s.count {
				ogot, pgot = float64(on), float64(pn)
			}
			if !ofound || !pfound || !near(ogot, s.want) || !near(pgot, s.want) {
				t.Errorf("%s: OTLP %v (found %v), /metrics %v (found %v), want %v in both", s.otlp, ogot, ofound, pgot, pfound, s.want)
			}
		})
	}
}

// TestMetricsCountTurnsFailedBeforeTheEngine: a turn that cannot start (the
// session's provider is not configured on this server) is counted like any
// other failed turn.
func TestMetricsCountTurnsFailedBeforeTheEngine(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	cs := &store.Session{Principal: "alice", Provider: "retired-provider", Model: "gone-model"}
	if err := h.env.Store.CreateSession(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	s := h.open(h.token, cs.ID, 0)
	tid := h.send(h.token, cs.ID, "hello")
	evs := s.until(t, 10*time.Second, finished(tid))
	last := evs[len(evs)-1]
	if r, _ := last.Data["result"].(map[string]any); r["exit"] != string(turn.ExitConfigurationFailed) {
		t.Fatalf("turn_finished = %s, want exit configuration_failed", last.Raw)
	}
	scrape := telemetrytest.ParseProm(t, h.metrics(t))
	if got, _, _ := scrape.Value("talaria_turns_total", map[string]string{"talaria_exit": string(turn.ExitConfigurationFailed)}); got != 1 {
		t.Errorf("talaria_turns_total{exit=configuration_failed} = %v, want 1", got)
	}
}
