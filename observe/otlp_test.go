package observe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/catalogue"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/telemetrytest"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/observe"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// setup wires telemetry exactly as the CLI does, from the environment
// alone: OTEL_EXPORTER_OTLP_ENDPOINT turns export on.
func setup(t *testing.T, r *telemetrytest.Receiver, capture string) *observe.Telemetry {
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.URL, "OTEL_SERVICE_NAME": "talaria-test"}
	tel, err := observe.Setup(context.Background(), observe.Settings{Capture: capture, OwnKeys: []string{"test-key-held-by-talaria"}},
		func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if tel.Observer == nil {
		t.Fatal("OTEL_EXPORTER_OTLP_ENDPOINT did not turn telemetry on")
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel
}

func flush(t *testing.T, tel *observe.Telemetry) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tel.ForceFlush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

func noopTool() tool.Tool {
	return testenv.MustFunc(tool.Info{Name: "noop", Description: "Does nothing.", Parameters: testenv.ObjectSchema(`{"i":{"type":"integer"}}`, "i"), ReadOnly: true},
		func(_ context.Context, args json.RawMessage) (tool.Result, error) {
			return tool.Result{Content: "ok " + string(args)}, nil
		})
}

// history is an earlier conversation worth compressing.
func history(n int) []*store.Message {
	var rows []*store.Message
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 40)
	for i := 0; i < n; i++ {
		rows = append(rows,
			&store.Message{Message: llm.NewText(llm.RoleUser, fmt.Sprintf("question %d: %s", i, filler))},
			&store.Message{Message: llm.NewText(llm.RoleAssistant, fmt.Sprintf("answer %d: %s", i, filler))})
	}
	return rows
}

const badKeyBody = `{"error":{"message":"Incorrect API key provided: sk-proj-****abcd.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`

// scriptedEnv is a turn that goes through every recovery: a context
// overflow (compression), an overload (retry), an empty answer (guard), a
// tool round, a refused key (fallback), and the fallback's answer carrying
// a dated model name that only the catalogue prices.
func scriptedEnv(t *testing.T, obs turn.Observer) *testenv.Env {
	env := testenv.New(t, testenv.Options{NoBuiltins: true, Fallbacks: []string{"fb-model"}, ExtraTools: []tool.Tool{noopTool()},
		Configure: func(c *agent.Config) {
			testenv.WithContext(testenv.ContextOptions{Window: 100_000})(c)
			c.Catalogue = catalogue.New(map[string]catalogue.Model{
				"test-model":          {Window: 100_000, MaxOutput: 1024},
				"fb-model-2026-01-01": {Window: 100_000, MaxOutput: 1024, InputPerMTok: 1, OutputPerMTok: 2},
				testenv.SummaryModel:  {Window: 100_000, MaxOutput: 1024, InputPerMTok: 1, OutputPerMTok: 2},
			})
			c.Observer = obs
		}})
	if err := env.Store.Append(context.Background(), store.Fence{SessionID: env.Session.ID}, history(20)...); err != nil {
		t.Fatal(err)
	}
	final := fakellm.Text("All done.").WithUsage(1000, 500)
	final.Model = "fb-model-2026-01-01"
	env.Srv.ScriptModel("test-model",
		fakellm.HTTPError(400, "invalid_request_error", "This model's maximum context length is 4096 tokens. However, your messages resulted in 9000 tokens."),
		fakellm.RawError(503, `{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","param":null,"code":null}}`),
		fakellm.Empty(),
		fakellm.Calls(fakellm.ToolCall("noop", `{"i":1}`)),
		fakellm.RawError(401, badKeyBody),
	)
	env.Srv.ScriptModel(testenv.SummaryModel, fakellm.Text("## Task\nsummary of the earlier work").WithUsage(3000, 100))
	env.Srv.ScriptModel("fb-model", final)
	return env
}

func TestSpansOfARealTurn(t *testing.T) {
	r := telemetrytest.NewReceiver(t)
	tel := setup(t, r, "redacted")
	env := scriptedEnv(t, tel.Observer)
	res := env.Run("please use key sk-proj-Xk3vQ9mZr7Lp2Ws8Nb4Tc6Yd1Fg5Hj0KaUe2Ri9 and go")
	if res.Exit != turn.ExitCompleted || res.Compactions != 1 {
		t.Fatalf("turn: exit %s compactions %d failure %+v routes %+v", res.Exit, res.Compactions, res.Failure, res.Routes)
	}
	flush(t, tel)
	spans := r.Spans()

	var root *tracepb.Span
	var chats, tools []*tracepb.Span
	for _, s := range spans {
		switch {
		case s.Name == "turn":
			root = s
		case strings.HasPrefix(s.Name, "chat "):
			chats = append(chats, s)
		case strings.HasPrefix(s.Name, "execute_tool "):
			tools = append(tools, s)
		}
	}
	if root == nil || len(root.ParentSpanId) != 0 {
		t.Fatalf("no root turn span in %d spans", len(spans))
	}
	for _, s := range append(chats, tools...) {
		if string(s.ParentSpanId) != string(root.SpanId) || string(s.TraceId) != string(root.TraceId) {
			t.Errorf("span %q is not a child of the turn span", s.Name)
		}
		if s.EndTimeUnixNano < s.StartTimeUnixNano || s.EndTimeUnixNano == 0 {
			t.Errorf("span %q not closed", s.Name)
		}
	}
	var names []string
	for _, s := range chats {
		names = append(names, s.Name)
	}
	want := "chat test-model,chat test-model,chat test-model,chat test-model,chat test-model,chat fb-model"
	if strings.Join(names, ",") != want {
		t.Fatalf("chat spans %v, want %s", names, want)
	}
	classes := []string{"context_overflow", "overloaded", "", "", "auth"}
	for i, c := range classes {
		a := telemetrytest.Attrs(chats[i].Attributes)
		if a["gen_ai.operation.name"] != "chat" || a["gen_ai.request.model"] != "test-model" || a["gen_ai.provider.name"] != "primary" {
			t.Errorf("attempt %d attributes %v", i+1, a)
		}
		if got, _ := a["error.type"].(string); !strings.HasPrefix(got, c) || (c == "") != (got == "") {
			t.Errorf("attempt %d error.type %q, want %q…", i+1, got, c)
		}
	}
	last := telemetrytest.Attrs(chats[5].Attributes)
	if last["gen_ai.request.model"] != "fb-model" || last["gen_ai.response.model"] != "fb-model-2026-01-01" ||
		last["gen_ai.usage.input_tokens"] != int64(1000) || last["gen_ai.usage.output_tokens"] != int64(500) ||
		last["gen_ai.response.finish_reasons"] != "stop" || last["talaria.pricing"] != "priced" {
		t.Errorf("fallback call attributes %v", last)
	}
	// Priced with the model that answered: 1000 in at $1/M + 500 out at $2/M.
	if c, _ := last["talaria.cost_usd"].(float64); c < 0.00199 || c > 0.00201 {
		t.Errorf("cost %v, want 0.002 (priced by the response model)", last["talaria.cost_usd"])
	}
	if len(tools) != 1 || telemetrytest.Attrs(tools[0].Attributes)["gen_ai.tool.name"] != "noop" || telemetrytest.Attrs(tools[0].Attributes)["gen_ai.tool.call.arguments"] != `{"i":1}` {
		t.Errorf("tool spans %v", tools)
	}
	ra := telemetrytest.Attrs(root.Attributes)
	if ra["talaria.exit"] != "completed" || ra["gen_ai.response.model"] != "fb-model-2026-01-01" || ra["talaria.session.id"] != env.Session.ID {
		t.Errorf("turn attributes %v", ra)
	}
	if msg, _ := ra["talaria.user_message"].(string); !strings.Contains(msg, "[REDACTED]") || strings.Contains(msg, "sk-proj-Xk3") {
		t.Errorf("user message not redacted: %q", msg)
	}
	var events []string
	for _, e := range root.Events {
		name := e.Name
		if o, ok := telemetrytest.Attrs(e.Attributes)["talaria.compression.outcome"]; ok {
			name += ":" + o.(string)
		}
		events = append(events, name)
	}
	// The overflow names a 4,096-token window, so the preflight gate tries
	// once more before the next call and finds nothing more to gain.
	if got := strings.Join(events, ","); got != "compression:compressed,compression:no_progress,guard,fallback" {
		t.Errorf("turn events %v", got)
	}
	for _, s := range spans {
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.GetStringValue(), "test-key-held-by-talaria") {
				t.Errorf("Talaria's own key recorded in %s.%s", s.Name, kv.Key)
			}
		}
	}
}

func TestMetricsOfAScriptedTurn(t *testing.T) {
	r := telemetrytest.NewReceiver(t)
	tel := setup(t, r, "metadata")
	env := scriptedEnv(t, tel.Observer)
	res := env.Run("go")
	if res.Exit != turn.ExitCompleted {
		t.Fatalf("turn: %s %+v", res.Exit, res.Failure)
	}
	// Shutdown pushes the final cumulative values.
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	ms := r.Metrics()
	cases := []struct {
		name  string
		match map[string]string
		want  float64
	}{
		{"talaria.retries", map[string]string{"error.type": "overloaded"}, 1},
		{"talaria.fallbacks", map[string]string{"talaria.fallback.from": "primary/test-model", "talaria.fallback.to": "fallback/fb-model"}, 1},
		{"talaria.compressions", map[string]string{"talaria.compression.outcome": "compressed"}, 1},
		{"talaria.guard.firings", map[string]string{"talaria.guard": "empty_response", "talaria.guard.action": "retry"}, 1},
		{"talaria.turns", map[string]string{"talaria.exit": "completed"}, 1},
		{"talaria.tool.calls", map[string]string{"gen_ai.tool.name": "noop"}, 1},
		{"talaria.cost.usd", map[string]string{"gen_ai.response.model": "fb-model-2026-01-01", "talaria.cost.source": "call"}, 0.002},
		// The summary call, priced with the summarizer's model: 3000 in at
		// $1/M, 100 out at $2/M.
		{"talaria.cost.usd", map[string]string{"gen_ai.response.model": testenv.SummaryModel, "talaria.cost.source": "compression"}, 0.0032},
		// Every dollar of the turn is counted once.
		{"talaria.cost.usd", nil, res.CostUSD},
		{"gen_ai.client.token.usage", map[string]string{"gen_ai.response.model": testenv.SummaryModel, "gen_ai.token.type": "input"}, 3000},
		// So is every token.
		{"gen_ai.client.token.usage", map[string]string{"gen_ai.token.type": "input"}, float64(res.Usage.PromptTokens())},
		{"gen_ai.client.token.usage", map[string]string{"gen_ai.token.type": "output"}, float64(res.Usage.OutputTokens)},
		{"talaria.calls", map[string]string{"talaria.pricing": "unpriced"}, 2},
		{"gen_ai.client.token.usage", map[string]string{"gen_ai.response.model": "fb-model-2026-01-01", "gen_ai.token.type": "output"}, 500},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _, found := telemetrytest.MetricValue(ms, c.name, c.match)
			if !found || got < c.want*0.999 || got > c.want*1.001 {
				t.Errorf("%s%v = %v (found %v), want %v", c.name, c.match, got, found, c.want)
			}
		})
	}
	// One duration point per attempt: three failed, three answered.
	if _, n, _ := telemetrytest.MetricValue(ms, "gen_ai.client.operation.duration", nil); n != 6 {
		t.Errorf("operation duration count %d, want 6", n)
	}
	if _, n, _ := telemetrytest.MetricValue(ms, "gen_ai.client.operation.duration", map[string]string{"error.type": "auth"}); n != 1 {
		t.Errorf("failed-call duration with error.type auth: %d points", n)
	}
}
