package promtext

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// toDTO is the client library's model of a family, to encode with its
// own text encoder.
func toDTO(f Family) *dto.MetricFamily {
	typ := map[Type]dto.MetricType{Gauge: dto.MetricType_GAUGE, Counter: dto.MetricType_COUNTER, Histogram: dto.MetricType_HISTOGRAM, Summary: dto.MetricType_SUMMARY}[f.Type]
	out := &dto.MetricFamily{Name: new(f.Name), Help: new(f.Help), Type: &typ}
	for _, m := range f.Metrics {
		dm := &dto.Metric{}
		for _, l := range m.Labels {
			dm.Label = append(dm.Label, &dto.LabelPair{Name: new(l.Name), Value: new(l.Value)})
		}
		switch f.Type {
		case Gauge:
			dm.Gauge = &dto.Gauge{Value: new(m.Value)}
		case Counter:
			dm.Counter = &dto.Counter{Value: new(m.Value)}
		case Histogram:
			dm.Histogram = &dto.Histogram{SampleCount: new(m.Count), SampleSum: new(m.Sum)}
			for _, b := range m.Buckets {
				dm.Histogram.Bucket = append(dm.Histogram.Bucket, &dto.Bucket{UpperBound: new(b.UpperBound), CumulativeCount: new(b.Count)})
			}
		case Summary:
			dm.Summary = &dto.Summary{SampleCount: new(m.Count), SampleSum: new(m.Sum)}
			for _, q := range m.Quantiles {
				dm.Summary.Quantile = append(dm.Summary.Quantile, &dto.Quantile{Quantile: new(q.Q), Value: new(q.Value)})
			}
		}
		out.Metric = append(out.Metric, dm)
	}
	return out
}

func encodeReference(t *testing.T, fams []Family) string {
	t.Helper()
	var b bytes.Buffer
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(&b, toDTO(f)); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// TestWriteMatchesClientLibrary: Write produces what client_golang's text
// encoder produces for the same families, on values that stress the number
// formatting and escaping.
func TestWriteMatchesClientLibrary(t *testing.T) {
	fams := Normalize(append(Runtime(), []Family{
		{Name: "z_values", Help: "Line one.\nLine \\ two \"quoted\".", Type: Gauge, Metrics: []Metric{
			{Labels: []Label{{"b", "2"}, {"a", "x\"y\\z\nw"}}, Value: 1},
			{Labels: []Label{{"a", ""}, {"b", "1"}}, Value: 0},
			{Labels: []Label{{"b", "0"}, {"a", "x"}}, Value: -1},
			{Labels: []Label{{"a", "nan"}, {"b", "0"}}, Value: math.NaN()},
			{Labels: []Label{{"a", "inf"}, {"b", "0"}}, Value: math.Inf(-1)},
			{Labels: []Label{{"a", "big"}, {"b", "0"}}, Value: 1.8446744073709552e+19},
			{Labels: []Label{{"a", "small"}, {"b", "0"}}, Value: 1e-9},
			{Labels: []Label{{"a", "frac"}, {"b", "0"}}, Value: 0.1 + 0.2},
		}},
		{Name: "a_hist_seconds", Help: "", Type: Histogram, Metrics: []Metric{
			{Labels: []Label{{"route", "/b"}}, Buckets: []Bucket{{0.5, 1}, {0.1, 0}, {2.5, 3}}, Sum: 4.25, Count: 4},
			{Labels: []Label{{"route", "/a"}}, Buckets: []Bucket{{1, 1}, {math.Inf(+1), 2}}, Sum: 3, Count: 2},
			{Labels: nil, Sum: 0, Count: 0},
		}},
		{Name: "empty", Help: "dropped", Type: Counter},
	}...))
	var got bytes.Buffer
	if err := Write(&got, fams); err != nil {
		t.Fatal(err)
	}
	if want := encodeReference(t, fams); got.String() != want {
		t.Errorf("Write differs from client_golang's encoder:\n--- want\n%s\n--- got\n%s", want, got.String())
	}
	if strings.Contains(got.String(), "empty") {
		t.Error("a family without metrics was written")
	}
	if !strings.HasPrefix(got.String(), "# HELP a_hist_seconds \n# TYPE a_hist_seconds histogram\na_hist_seconds_bucket{le=\"+Inf\"} 0\n") {
		t.Errorf("families or metrics are not in the registry's order:\n%s", got.String())
	}
}

// TestRuntimeFamiliesAsClientLibrary: Runtime serves the families of
// client_golang's default Go and process collectors, with the same names,
// types and help, so dashboards on go_* and process_* keep working.
func TestRuntimeFamiliesAsClientLibrary(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ref, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, f := range ref {
		want[f.GetName()] = strings.ToLower(f.GetType().String()) + " " + f.GetHelp()
	}
	got := map[string]string{}
	for _, f := range Normalize(Runtime()) {
		got[f.Name] = f.Type.String() + " " + f.Help
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %q, client_golang: %q", name, got[name], w)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s is not served by client_golang's collectors", name)
		}
	}
	// And the values are live: the process's resident memory and start.
	parser := expfmt.NewTextParser(model.UTF8Validation)
	scrape, err := parser.TextToMetricFamilies(strings.NewReader(encodeReference(t, Normalize(Runtime()))))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"process_resident_memory_bytes", "process_start_time_seconds", "go_memstats_sys_bytes", "go_goroutines", "process_max_fds"} {
		if f := scrape[name]; f == nil || f.Metric[0].GetGauge().GetValue() <= 0 {
			t.Errorf("%s is not positive: %v", name, f)
		}
	}
}
