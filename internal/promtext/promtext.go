// Package promtext writes the Prometheus text exposition format (version
// 0.0.4) and the Go runtime and process metrics a Prometheus client
// library serves (go_*, process_*), without the client library: the CLI
// links the server, so every invocation would pay for client_golang's
// registry, protobuf model and collectors (issue 30). The output is
// byte-identical to client_golang's text encoder for the same families.
package promtext

import (
	"bufio"
	"cmp"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Type is a metric family's type.
type Type int

// The family types of the text format.
const (
	Gauge Type = iota
	Counter
	Histogram
	Summary
)

func (t Type) String() string {
	switch t {
	case Counter:
		return "counter"
	case Histogram:
		return "histogram"
	case Summary:
		return "summary"
	}
	return "gauge"
}

// Family is one metric name with its samples.
type Family struct {
	Name, Help string
	Type       Type
	Metrics    []Metric
}

// Label is one label pair.
type Label struct{ Name, Value string }

// Metric is one labelled sample: Value for gauges and counters, Buckets
// (cumulative, by upper bound; +Inf is added from Count), Sum and Count
// for histograms, Quantiles with Sum and Count for summaries.
type Metric struct {
	Labels    []Label
	Value     float64
	Buckets   []Bucket
	Quantiles []Quantile
	Sum       float64
	Count     uint64
}

// Bucket is a histogram bucket: observations ≤ UpperBound, cumulative.
type Bucket struct {
	UpperBound float64
	Count      uint64
}

// Quantile is a summary's quantile.
type Quantile struct{ Q, Value float64 }

// Normalize orders families as a Prometheus registry gathers them: by
// name, empty ones dropped; each metric's labels by name, the metrics by
// their label values, the buckets by bound.
func Normalize(fams []Family) []Family {
	out := fams[:0:0]
	for _, f := range fams {
		if len(f.Metrics) == 0 {
			continue
		}
		for i := range f.Metrics {
			m := &f.Metrics[i]
			slices.SortFunc(m.Labels, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
			slices.SortFunc(m.Buckets, func(a, b Bucket) int { return cmp.Compare(a.UpperBound, b.UpperBound) })
		}
		slices.SortStableFunc(f.Metrics, compareMetrics)
		out = append(out, f)
	}
	slices.SortStableFunc(out, func(a, b Family) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// compareMetrics is client_golang's order: fewer labels first, then label
// values position by position.
func compareMetrics(a, b Metric) int {
	if len(a.Labels) != len(b.Labels) {
		return cmp.Compare(len(a.Labels), len(b.Labels))
	}
	for i := range a.Labels {
		if c := strings.Compare(a.Labels[i].Value, b.Labels[i].Value); c != 0 {
			return c
		}
	}
	return 0
}

// Write writes normalized families (Normalize) in the text format.
func Write(w io.Writer, fams []Family) error {
	bw := bufio.NewWriter(w)
	var num []byte
	for _, f := range fams {
		if len(f.Metrics) == 0 {
			continue
		}
		bw.WriteString("# HELP ")
		bw.WriteString(f.Name)
		bw.WriteByte(' ')
		helpEscaper.WriteString(bw, f.Help)
		bw.WriteString("\n# TYPE ")
		bw.WriteString(f.Name)
		bw.WriteByte(' ')
		bw.WriteString(f.Type.String())
		bw.WriteByte('\n')
		for _, m := range f.Metrics {
			switch f.Type {
			case Histogram:
				inf := false
				for _, b := range m.Buckets {
					num = sample(bw, num, f.Name+"_bucket", m.Labels, "le", b.UpperBound, float64(b.Count))
					inf = inf || math.IsInf(b.UpperBound, +1)
				}
				if !inf {
					num = sample(bw, num, f.Name+"_bucket", m.Labels, "le", math.Inf(+1), float64(m.Count))
				}
				num = sample(bw, num, f.Name+"_sum", m.Labels, "", 0, m.Sum)
				num = sample(bw, num, f.Name+"_count", m.Labels, "", 0, float64(m.Count))
			case Summary:
				for _, q := range m.Quantiles {
					num = sample(bw, num, f.Name, m.Labels, "quantile", q.Q, q.Value)
				}
				num = sample(bw, num, f.Name+"_sum", m.Labels, "", 0, m.Sum)
				num = sample(bw, num, f.Name+"_count", m.Labels, "", 0, float64(m.Count))
			default:
				num = sample(bw, num, f.Name, m.Labels, "", 0, m.Value)
			}
		}
	}
	return bw.Flush()
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func sample(w *bufio.Writer, num []byte, name string, labels []Label, extra string, extraValue, v float64) []byte {
	w.WriteString(name)
	if len(labels) > 0 || extra != "" {
		sep := byte('{')
		for _, l := range labels {
			w.WriteByte(sep)
			w.WriteString(l.Name)
			w.WriteString(`="`)
			valueEscaper.WriteString(w, l.Value)
			w.WriteByte('"')
			sep = ','
		}
		if extra != "" {
			w.WriteByte(sep)
			w.WriteString(extra)
			w.WriteString(`="`)
			num = appendFloat(num[:0], extraValue)
			w.Write(num)
			w.WriteByte('"')
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	num = appendFloat(num[:0], v)
	w.Write(num)
	w.WriteByte('\n')
	return num
}

func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
