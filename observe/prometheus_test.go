package observe_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/talaria-agent/talaria/internal/promtext"
	"github.com/talaria-agent/talaria/internal/testing/telemetrytest"
	"github.com/talaria-agent/talaria/observe"
	"github.com/talaria-agent/talaria/turn"
)

// reference is the OpenTelemetry Prometheus exporter served by
// client_golang's promhttp, as /metrics was before issue 30: the
// PromReader must serve the same bytes.
type reference struct {
	reg    *prometheus.Registry
	reader sdkmetric.Reader
}

func newReference(t *testing.T) reference {
	t.Helper()
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	return reference{reg: reg, reader: exp}
}

// scrapeBoth fetches both /metrics with the same request headers and
// returns status, Content-Type, Content-Encoding and the decoded body.
func scrapeBoth(t *testing.T, ref reference, pr *observe.PromReader, header http.Header, query string) (want, got [4]string) {
	t.Helper()
	do := func(h http.Handler) [4]string {
		req := httptest.NewRequest("GET", "/metrics"+query, nil)
		req.Header = header.Clone()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body := rec.Body.Bytes()
		if rec.Header().Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		return [4]string{http.StatusText(rec.Code), rec.Header().Get("Content-Type"), rec.Header().Get("Content-Encoding") + " vary=" + strings.Join(rec.Header().Values("Vary"), ","), string(body)}
	}
	return do(promhttp.HandlerFor(ref.reg, promhttp.HandlerOpts{})), do(promtext.Handler(pr.Families))
}

// TestPromReaderByteIdentical records every kind of instrument, with
// attribute keys that need escaping or collide once escaped, label values
// that need quoting, units that become suffixes, two scopes and a
// description conflict, into one MeterProvider read by both the exporter
// and the PromReader; each scrape must be the same bytes.
func TestPromReaderByteIdentical(t *testing.T) {
	ref := newReference(t)
	pr := observe.NewPromReader()
	res := resource.NewWithAttributes("", attribute.String("service.name", "talaria-test"), attribute.String("host.name", `a "quoted" \ host`))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(ref.reader), sdkmetric.WithReader(pr))
	defer mp.Shutdown(context.Background())
	ctx := context.Background()
	m1 := mp.Meter("github.com/talaria-agent/talaria/observe")
	m2 := mp.Meter("scope.two", metric.WithInstrumentationVersion("1.2.3"), metric.WithSchemaURL("https://opentelemetry.io/schemas/1.26.0"),
		metric.WithInstrumentationAttributes(attribute.String("scope.attr", "x"), attribute.String("name", "reserved")))

	turns, _ := m1.Int64Counter("talaria.turns", metric.WithUnit("{turn}"), metric.WithDescription("Turns ended, by exit reason."))
	cost, _ := m1.Float64Counter("talaria.cost.usd", metric.WithUnit("{USD}"), metric.WithDescription("Cost.\nSecond line with a \\ backslash."))
	spend, _ := m1.Float64Counter("talaria.principal.spend", metric.WithUnit("USD"))
	active, _ := m1.Int64UpDownCounter("talaria.active_turns", metric.WithUnit("{turn}"), metric.WithDescription("Turns running now."))
	usage, _ := m1.Int64UpDownCounter("talaria.principal.usage", metric.WithUnit("1"))
	dur, _ := m1.Float64Histogram("http.server.request.duration", metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
	tokens, _ := m1.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"))
	rate, _ := m1.Float64Gauge("cache.hit", metric.WithUnit("1"))
	rx, _ := m1.Int64ObservableCounter("net.rx", metric.WithUnit("By/s"))
	_, _ = m1.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(rx, 123456789)
		return nil
	}, rx)
	total, _ := m2.Int64Counter("requests_total")
	// The same name in a second scope. Its description is the same: with
	// two descriptions, which one a scrape keeps depends on the order the
	// SDK hands scopes to each reader, which is random per reader, so
	// the exporter and PromReader cannot be compared on it (that failed
	// about one scrape in two).
	dup, _ := m2.Int64Counter("talaria.turns", metric.WithUnit("{turn}"), metric.WithDescription("Turns ended, by exit reason."))

	turns.Add(ctx, 3, metric.WithAttributes(attribute.String("talaria.exit", "completed")))
	turns.Add(ctx, 1, metric.WithAttributes(attribute.String("talaria.exit", "budget_exhausted")))
	cost.Add(ctx, 0.0021, metric.WithAttributes(attribute.String("gen_ai.response.model", "gpt-4.1")))
	cost.Add(ctx, 1e-9, metric.WithAttributes(attribute.String("gen_ai.response.model", "tiny\nline")))
	spend.Add(ctx, 12345678.5, metric.WithAttributes(attribute.String("talaria.principal", "ops")))
	active.Add(ctx, 2)
	active.Add(ctx, -1)
	usage.Add(ctx, 4, metric.WithAttributes(attribute.String("talaria.principal", "ops"), attribute.String("talaria.limit", "turns")))
	for _, v := range []float64{0.001, 0.02, 0.3, 7, 42} {
		dur.Record(ctx, v, metric.WithAttributes(attribute.String("http.request.method", "POST"), attribute.String("http.route", "POST /v1/sessions/{id}/messages"), attribute.Int("http.response.status_code", 409)))
	}
	dur.Record(ctx, 0.2, metric.WithAttributes(attribute.String("http.request.method", "GET"), attribute.String("http.route", "GET /metrics"), attribute.Int("http.response.status_code", 200)))
	tokens.Record(ctx, 1500, metric.WithAttributes(attribute.String("gen_ai.token.type", "input"), attribute.Bool("cached", true), attribute.Float64("ratio", 0.25)))
	tokens.Record(ctx, 70000000, metric.WithAttributes(attribute.String("gen_ai.token.type", "output"), attribute.StringSlice("tags", []string{"a", "b"})))
	rate.Record(ctx, 0.75, metric.WithAttributes(attribute.String("a.b", "1"), attribute.String("a_b", "0"), attribute.String("9lives", "cat")))
	total.Add(ctx, 5)
	dup.Add(ctx, 1, metric.WithAttributes(attribute.String("talaria.exit", "completed")))

	for _, tc := range []struct {
		name   string
		header http.Header
		query  string
	}{
		{"plain", http.Header{}, ""},
		{"gzip", http.Header{"Accept-Encoding": {"gzip"}}, ""},
		{"prometheus scrape", http.Header{"Accept": {"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"}, "Accept-Encoding": {"gzip"}}, ""},
		{"filter", http.Header{}, "?name[]=talaria_turns_total&name[]=target_info"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for round := range 2 { // the second scrape reads cumulative state again
				want, got := scrapeBoth(t, ref, pr, tc.header, tc.query)
				for i, what := range []string{"status", "Content-Type", "Content-Encoding", "body"} {
					if want[i] != got[i] {
						t.Errorf("round %d: %s differs:\n--- exporter + promhttp\n%s\n--- PromReader\n%s", round, what, want[i], got[i])
					}
				}
			}
		})
	}
}

// TestPrometheusSharesInstruments: the PromReader (the gateway's /metrics)
// reads the same instruments the OTLP exporter pushes: one MeterProvider,
// two readers. With no OTLP endpoint the reader alone turns metrics on,
// and after a real scripted turn it serves what the OpenTelemetry
// exporter serves, byte for byte.
func TestPrometheusSharesInstruments(t *testing.T) {
	ref := newReference(t)
	pr := observe.NewPromReader()
	tel, err := observe.Setup(context.Background(), observe.Settings{Readers: []sdkmetric.Reader{pr, ref.reader}}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	if tel.Observer == nil || tel.MeterProvider == nil {
		t.Fatal("a metric reader alone must turn the observer on")
	}
	env := scriptedEnv(t, tel.Observer)
	if res := env.Run("go"); res.Exit != turn.ExitCompleted {
		t.Fatalf("turn: %s", res.Exit)
	}
	want, got := scrapeBoth(t, ref, pr, http.Header{"Accept-Encoding": {"gzip"}}, "")
	if want != got {
		t.Errorf("after a turn /metrics differs:\n--- exporter + promhttp\n%q\n--- PromReader\n%q", want, got)
	}
	scrape := telemetrytest.ParseProm(t, got[3])
	for name, want := range map[string]float64{
		"talaria_turns_total":                      1,
		"talaria_retries_total":                    1,
		"talaria_fallbacks_total":                  1,
		"talaria_guard_firings_total":              1,
		"gen_ai_client_operation_duration_seconds": 6,
	} {
		sum, n, found := scrape.Value(name, nil)
		if strings.HasSuffix(name, "_seconds") {
			sum = float64(n)
		}
		if !found || sum != want {
			t.Errorf("%s = %v (found %v), want %v", name, sum, found, want)
		}
	}
}
