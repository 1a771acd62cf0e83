package observe_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/talaria-agent/talaria/observe"
	"github.com/talaria-agent/talaria/turn"
)

// A Prometheus registry (the gateway's /metrics) reads the same
// instruments the OTLP exporter pushes: one MeterProvider, two readers.
// With no OTLP endpoint the Prometheus reader alone turns metrics on.
func TestPrometheusSharesInstruments(t *testing.T) {
	reg := prometheus.NewRegistry()
	reader, err := observe.PrometheusReader(reg)
	if err != nil {
		t.Fatal(err)
	}
	tel, err := observe.Setup(context.Background(), observe.Settings{Readers: []sdkmetric.Reader{reader}}, func(string) string { return "" })
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
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.Metric {
			switch {
			case m.Counter != nil:
				got[f.GetName()] += m.Counter.GetValue()
			case m.Histogram != nil:
				got[f.GetName()] += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	for name, want := range map[string]float64{
		"talaria_turns_total":                      1,
		"talaria_retries_total":                    1,
		"talaria_fallbacks_total":                  1,
		"talaria_guard_firings_total":              1,
		"gen_ai_client_operation_duration_seconds": 6,
	} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v (have %v)", name, got[name], want, got)
		}
	}
}
