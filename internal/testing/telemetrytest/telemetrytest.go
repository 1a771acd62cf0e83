// Package telemetrytest reads what Talaria's telemetry emits, for tests:
// an OTLP/HTTP collector on 127.0.0.1 that decodes the real protobuf
// payloads the exporters send, and a reader of Prometheus text (/metrics).
// Both sum values by metric name and attributes, so a test can compare the
// two views of the same instruments.
package telemetrytest

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	collmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver is an OTLP/HTTP collector (http/protobuf) for one test.
type Receiver struct {
	// URL is the base endpoint: what OTEL_EXPORTER_OTLP_ENDPOINT names.
	URL string

	mu      sync.Mutex
	spans   []*tracepb.Span
	metrics []*metricpb.Metric
}

// NewReceiver starts a collector that stops when the test ends.
func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		var m colltrace.ExportTraceServiceRequest
		if !decode(t, w, req, &m) {
			return
		}
		r.mu.Lock()
		for _, rs := range m.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		reply(w, &colltrace.ExportTraceServiceResponse{})
	})
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, req *http.Request) {
		var m collmetric.ExportMetricsServiceRequest
		if !decode(t, w, req, &m) {
			return
		}
		// Talaria exports cumulative values: the latest export holds the
		// totals, so it replaces the previous one.
		var ms []*metricpb.Metric
		for _, rm := range m.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				ms = append(ms, sm.Metrics...)
			}
		}
		r.mu.Lock()
		r.metrics = ms
		r.mu.Unlock()
		reply(w, &collmetric.ExportMetricsServiceResponse{})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func decode(t testing.TB, w http.ResponseWriter, req *http.Request, m proto.Message) bool {
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		t.Errorf("OTLP content type %q", ct)
	}
	var src io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			t.Errorf("OTLP gzip body: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return false
		}
		src = zr
	}
	body, err := io.ReadAll(src)
	if err == nil {
		err = proto.Unmarshal(body, m)
	}
	if err != nil {
		t.Errorf("decoding OTLP payload: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func reply(w http.ResponseWriter, m proto.Message) {
	b, _ := proto.Marshal(m)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

// Spans returns every span received so far.
func (r *Receiver) Spans() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...)
}

// Metrics returns the metrics of the latest export.
func (r *Receiver) Metrics() []*metricpb.Metric {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*metricpb.Metric(nil), r.metrics...)
}

// Attrs flattens OTLP attributes (arrays joined with commas).
func Attrs(kvs []*commonpb.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = v.IntValue
		case *commonpb.AnyValue_DoubleValue:
			m[kv.Key] = v.DoubleValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = v.BoolValue
		case *commonpb.AnyValue_ArrayValue:
			var s []string
			for _, e := range v.ArrayValue.Values {
				s = append(s, e.GetStringValue())
			}
			m[kv.Key] = strings.Join(s, ",")
		}
	}
	return m
}

// MetricValue sums the data points of an OTLP metric whose attributes
// contain match (values compared as text): a counter's values, a histogram's sums and counts.
func MetricValue(ms []*metricpb.Metric, name string, match map[string]string) (sum float64, count uint64, found bool) {
	ok := func(kvs []*commonpb.KeyValue) bool {
		a := Attrs(kvs)
		for k, v := range match {
			if got, ok := a[k]; !ok || fmt.Sprint(got) != v {
				return false
			}
		}
		return true
	}
	for _, m := range ms {
		if m.Name != name {
			continue
		}
		if s := m.GetSum(); s != nil {
			for _, p := range s.DataPoints {
				if ok(p.Attributes) {
					found = true
					sum += p.GetAsDouble() + float64(p.GetAsInt())
				}
			}
		}
		if h := m.GetHistogram(); h != nil {
			for _, p := range h.DataPoints {
				if ok(p.Attributes) {
					found = true
					sum += p.GetSum()
					count += p.Count
				}
			}
		}
	}
	return sum, count, found
}

// Scrape is a parsed Prometheus text exposition (/metrics).
type Scrape map[string]*dto.MetricFamily

// ParseProm parses Prometheus text.
func ParseProm(t testing.TB, text string) Scrape {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, text)
	}
	return Scrape(fams)
}

// Value sums the samples of a family whose labels contain match: a
// counter's or gauge's values, a histogram's sums and counts.
func (s Scrape) Value(name string, match map[string]string) (sum float64, count uint64, found bool) {
	f := s[name]
	if f == nil {
		return 0, 0, false
	}
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, v := range match {
			if labels[k] != v {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += m.Histogram.GetSampleSum()
			count += m.Histogram.GetSampleCount()
		case m.Untyped != nil:
			sum += m.Untyped.GetValue()
		}
	}
	return sum, count, found
}
