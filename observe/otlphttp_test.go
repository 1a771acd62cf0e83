package observe

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	collmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/talaria-agent/talaria/internal/testing/telemetrytest"
)

// The hand-encoded export requests decode as the collector's own
// request types (the collector packages are test-only here).
func TestExportRequestDecodesAsCollectorRequest(t *testing.T) {
	r := telemetrytest.NewReceiver(t)
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"plain", map[string]string{}},
		{"gzip", map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			exp, err := httpTraceExporter(context.Background(), r.URL+"/v1/traces", nil, getenv)
			if err != nil {
				t.Fatal(err)
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			_, span := tp.Tracer("t").Start(context.Background(), "span-"+tc.name)
			span.SetAttributes(attribute.StringSlice("list", []string{"a", "b"}), attribute.Int("n", 7))
			span.End()
			if err := tp.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, s := range r.Spans() {
				if s.Name == "span-"+tc.name {
					found = true
					if a := telemetrytest.Attrs(s.Attributes); a["n"] != int64(7) {
						t.Errorf("attributes %v", a)
					}
				}
			}
			if !found {
				t.Errorf("span-%s not received: %d spans", tc.name, len(r.Spans()))
			}

			mexp, err := httpMetricExporterFor(r.URL+"/v1/metrics", nil, getenv)
			if err != nil {
				t.Fatal(err)
			}
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp)))
			m := mp.Meter("t")
			c, _ := m.Int64Counter("c_" + tc.name)
			c.Add(context.Background(), 3)
			h, _ := m.Float64Histogram("h_" + tc.name)
			h.Record(context.Background(), 0.5)
			h.Record(context.Background(), 2)
			if err := mp.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			if sum, _, ok := telemetrytest.MetricValue(r.Metrics(), "c_"+tc.name, nil); !ok || sum != 3 {
				t.Errorf("counter = %v, %v", sum, ok)
			}
			if sum, count, ok := telemetrytest.MetricValue(r.Metrics(), "h_"+tc.name, nil); !ok || sum != 2.5 || count != 2 {
				t.Errorf("histogram = %v/%v, %v", sum, count, ok)
			}
		})
	}
}

// A collector's 503/429 is retried (Retry-After honoured), a 400 is not;
// the environment's headers and config's headers are both sent, config
// winning.
func TestOTLPHTTPRetriesAndHeaders(t *testing.T) {
	for _, tc := range []struct {
		name     string
		statuses []int
		wantErr  bool
		attempts int
	}{
		{"ok", []int{200}, false, 1},
		{"503 then ok", []int{503, 429, 200}, false, 3},
		{"400 is final", []int{400, 200}, true, 1},
		{"always 502", []int{502, 502, 502, 502, 502, 502, 502, 502, 502, 502, 502, 502}, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var n int
			var got http.Header
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				mu.Lock()
				st := tc.statuses[min(n, len(tc.statuses)-1)]
				n++
				got = r.Header.Clone()
				mu.Unlock()
				if st == 429 {
					w.Header().Set("Retry-After", "0")
				}
				w.WriteHeader(st)
			}))
			defer srv.Close()
			env := map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=1,b=two%20words", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "c=3"}
			h, err := newOTLPHTTP(srv.URL+"/v1/traces", "TRACES", map[string]string{"c": "config"}, func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			h.backoff, h.maxBackoff, h.maxElapsed = time.Millisecond, 2*time.Millisecond, 200*time.Millisecond
			err = h.send(context.Background(), []byte{})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			mu.Lock()
			defer mu.Unlock()
			if tc.attempts > 0 && n != tc.attempts {
				t.Errorf("%d attempts, want %d", n, tc.attempts)
			}
			if tc.attempts == 0 && n < 2 {
				t.Errorf("%d attempts: a 502 was not retried", n)
			}
			if got.Get("c") != "config" || got.Get("Content-Type") != "application/x-protobuf" {
				t.Errorf("headers %v", got)
			}
		})
	}
}

// The signal's own variable wins over the generic one, and values are
// URL-decoded.
func TestOTLPHeadersFromEnvironment(t *testing.T) {
	env := map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=1,b=two%20words"}
	h, err := newOTLPHTTP("http://127.0.0.1:1/v1/traces", "TRACES", nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if h.headers.Get("a") != "1" || h.headers.Get("b") != "two words" {
		t.Errorf("headers %v", h.headers)
	}
	env["OTEL_EXPORTER_OTLP_TRACES_HEADERS"] = "x=y"
	h, _ = newOTLPHTTP("http://127.0.0.1:1/v1/traces", "TRACES", nil, func(k string) string { return env[k] })
	if h.headers.Get("x") != "y" || h.headers.Get("a") != "" {
		t.Errorf("signal headers %v", h.headers)
	}
	for _, bad := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"},
		{"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"},
		{"OTEL_EXPORTER_OTLP_HEADERS": "novalue"},
	} {
		if _, err := newOTLPHTTP("http://127.0.0.1:1/v1/traces", "TRACES", nil, func(k string) string { return bad[k] }); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// A collector's partial success is reported, not swallowed.
func TestOTLPPartialSuccess(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var resp proto.Message = &colltrace.ExportTraceServiceResponse{PartialSuccess: &colltrace.ExportTracePartialSuccess{RejectedSpans: 2, ErrorMessage: "too old"}}
		if r.URL.Path == "/v1/metrics" {
			resp = &collmetric.ExportMetricsServiceResponse{}
		}
		b, _ := proto.Marshal(resp)
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	h, err := newOTLPHTTP(srv.URL+"/v1/traces", "TRACES", nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if err := h.send(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "2 rejected: too old") {
		t.Errorf("err = %v", err)
	}
	h, _ = newOTLPHTTP(srv.URL+"/v1/metrics", "METRICS", nil, func(string) string { return "" })
	if err := h.send(context.Background(), nil); err != nil {
		t.Errorf("full success reported %v", err)
	}
}
