package observe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"unicode"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/talaria-agent/talaria/internal/promtext"
)

// PromReader is a metric reader that renders the instruments of its
// MeterProvider as Prometheus families: pass it in Settings.Readers (or
// to sdkmetric.WithReader) and serve Families with promtext.Handler.
//
// Its output is byte-identical to what the OpenTelemetry Prometheus
// exporter (go.opentelemetry.io/otel/exporters/prometheus, default
// options) served through client_golang's promhttp: the same names (units
// and _total suffixes, underscore escaping), the target_info family, the
// otel_scope_* labels, the first description kept per name. It replaces
// them because they linked client_golang and its protobuf model into every
// command of the CLI (issue 30). Exemplars are not rendered (the text
// format has none); exponential histograms appear as their +Inf bucket,
// sum and count, as client_golang's text encoder writes a native-only
// histogram.
type PromReader struct {
	sdkmetric.Reader

	mu sync.Mutex
	// seen is the first type and description of each name, as the
	// exporter keeps them: a later instrument of another type under the
	// same name is dropped, one with another description takes the first.
	seen map[string]seenFamily
}

type seenFamily struct {
	typ  promtext.Type
	help string
}

// NewPromReader returns a reader; it reads nothing until a MeterProvider
// registers it.
func NewPromReader() *PromReader {
	return &PromReader{Reader: sdkmetric.NewManualReader(), seen: map[string]seenFamily{}}
}

// Families collects the instruments now and returns them as Prometheus
// families (not normalized: promtext.Normalize orders them).
func (r *PromReader) Families(ctx context.Context) ([]promtext.Family, error) {
	var rm metricdata.ResourceMetrics
	if err := r.Collect(ctx, &rm); err != nil {
		if errors.Is(err, sdkmetric.ErrReaderShutdown) || errors.Is(err, sdkmetric.ErrReaderNotRegistered) {
			return nil, nil
		}
		// As the exporter: a producer's failure is reported, and what was
		// collected is still served.
		slog.Default().Warn("metrics: collecting", "err", err)
	}
	byName := map[string]int{}
	var fams []promtext.Family
	add := func(name, help string, typ promtext.Type, ms ...promtext.Metric) {
		i, ok := byName[name]
		if !ok {
			i = len(fams)
			byName[name] = i
			fams = append(fams, promtext.Family{Name: name, Help: help, Type: typ})
		}
		fams[i].Metrics = append(fams[i].Metrics, ms...)
	}
	var errs []error
	// A resource whose attributes have no label names is left out, not
	// an error (the exporter then disables target_info).
	if labels, err := promLabels(rm.Resource.Set()); err == nil {
		add("target_info", "Target metadata", promtext.Gauge, promtext.Metric{Labels: labels, Value: 1})
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name == "go.opentelemetry.io/contrib/bridges/prometheus" {
			continue // as the exporter: the bridge's metrics are not re-exported
		}
		scope := []promtext.Label{
			{Name: "otel_scope_name", Value: sm.Scope.Name},
			{Name: "otel_scope_version", Value: sm.Scope.Version},
			{Name: "otel_scope_schema_url", Value: sm.Scope.SchemaURL},
		}
		attrs, err := promLabels(&sm.Scope.Attributes)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, l := range attrs {
			if l.Name == "name" || l.Name == "version" || l.Name == "schema_url" {
				continue
			}
			scope = append(scope, promtext.Label{Name: "otel_scope_" + l.Name, Value: l.Value})
		}
		for _, m := range sm.Metrics {
			typ, naming, ok := promType(m.Data)
			if !ok {
				errs = append(errs, fmt.Errorf("observe: metric %s: unsupported aggregation %T", m.Name, m.Data))
				continue
			}
			name := promName(m.Name, m.Unit, naming)
			if name == "" || strings.Trim(name, "_") == "" {
				errs = append(errs, fmt.Errorf("observe: metric %q has no Prometheus name", m.Name))
				continue
			}
			help, keep := r.family(name, m.Description, typ)
			if !keep {
				errs = append(errs, fmt.Errorf("observe: metric %s: type conflicts with an earlier instrument of the same name", name))
				continue
			}
			ms, err := promMetrics(m.Data, scope)
			if err != nil {
				errs = append(errs, fmt.Errorf("observe: metric %s: %w", name, err))
			}
			add(name, help, typ, ms...)
		}
	}
	// The exporter reports a bad instrument as an invalid metric, which
	// makes promhttp answer 500; the same here.
	return fams, errors.Join(errs...)
}

func (r *PromReader) family(name, help string, typ promtext.Type) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, ok := r.seen[name]
	if !ok {
		r.seen[name] = seenFamily{typ: typ, help: help}
		return help, true
	}
	return f.help, f.typ == typ
}

// naming is the metric kind that decides the name's suffixes.
type naming int

const (
	namingGauge naming = iota
	namingCounter
	namingUpDown
	namingHistogram
)

// promType is an aggregation's Prometheus type and the kind that names
// it; ok is false for one it does not export.
func promType(d metricdata.Aggregation) (typ promtext.Type, n naming, ok bool) {
	if typ, n, ok = promTypeOf[int64](d); ok {
		return typ, n, ok
	}
	return promTypeOf[float64](d)
}

func promTypeOf[N int64 | float64](d metricdata.Aggregation) (promtext.Type, naming, bool) {
	switch v := d.(type) {
	case metricdata.Histogram[N], metricdata.ExponentialHistogram[N]:
		return promtext.Histogram, namingHistogram, true
	case metricdata.Sum[N]:
		if v.IsMonotonic {
			return promtext.Counter, namingCounter, true
		}
		return promtext.Gauge, namingUpDown, true
	case metricdata.Gauge[N]:
		return promtext.Gauge, namingGauge, true
	}
	return 0, 0, false
}

// promMetrics is the samples of an aggregation promType accepts.
func promMetrics(d metricdata.Aggregation, scope []promtext.Label) ([]promtext.Metric, error) {
	// An aggregation of the other number type gives nil, nil; a matching
	// one a non-nil slice, even when empty.
	if ms, err := promMetricsOf[int64](d, scope); ms != nil || err != nil {
		return ms, err
	}
	return promMetricsOf[float64](d, scope)
}

func promMetricsOf[N int64 | float64](d metricdata.Aggregation, scope []promtext.Label) ([]promtext.Metric, error) {
	switch v := d.(type) {
	case metricdata.Sum[N]:
		return numberMetrics(v.DataPoints, scope)
	case metricdata.Gauge[N]:
		return numberMetrics(v.DataPoints, scope)
	case metricdata.Histogram[N]:
		return histogramMetrics(v.DataPoints, scope)
	case metricdata.ExponentialHistogram[N]:
		return expHistogramMetrics(v.DataPoints, scope)
	}
	return nil, nil
}

// pointMetrics turns each data point into a sample labelled with its
// attributes and scope; sample gives the point's attributes and values. A
// point that fails is left out and its error joined.
func pointMetrics[P any](dps []P, scope []promtext.Label,
	sample func(P) (attribute.Set, promtext.Metric, error)) ([]promtext.Metric, error) {
	out := make([]promtext.Metric, 0, len(dps))
	var errs []error
	for _, dp := range dps {
		attrs, m, err := sample(dp)
		if err == nil {
			m.Labels, err = promLabels(&attrs)
			m.Labels = append(m.Labels, scope...)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, m)
	}
	return out, errors.Join(errs...)
}

func numberMetrics[N int64 | float64](dps []metricdata.DataPoint[N], scope []promtext.Label) ([]promtext.Metric, error) {
	return pointMetrics(dps, scope, func(dp metricdata.DataPoint[N]) (attribute.Set, promtext.Metric, error) {
		return dp.Attributes, promtext.Metric{Value: float64(dp.Value)}, nil
	})
}

func histogramMetrics[N int64 | float64](dps []metricdata.HistogramDataPoint[N], scope []promtext.Label) ([]promtext.Metric, error) {
	return pointMetrics(dps, scope, func(dp metricdata.HistogramDataPoint[N]) (attribute.Set, promtext.Metric, error) {
		// Cumulative counts keyed by bound, as the exporter builds them (a
		// repeated bound keeps the last).
		buckets := make([]promtext.Bucket, 0, len(dp.Bounds))
		var cum uint64
		for i, b := range dp.Bounds {
			cum += dp.BucketCounts[i]
			if j := slices.IndexFunc(buckets, func(x promtext.Bucket) bool { return x.UpperBound == b }); j >= 0 {
				buckets[j].Count = cum
				continue
			}
			buckets = append(buckets, promtext.Bucket{UpperBound: b, Count: cum})
		}
		return dp.Attributes, promtext.Metric{Buckets: buckets, Sum: float64(dp.Sum), Count: dp.Count}, nil
	})
}

func expHistogramMetrics[N int64 | float64](dps []metricdata.ExponentialHistogramDataPoint[N], scope []promtext.Label) ([]promtext.Metric, error) {
	return pointMetrics(dps, scope, func(dp metricdata.ExponentialHistogramDataPoint[N]) (attribute.Set, promtext.Metric, error) {
		if dp.Scale < -4 {
			return dp.Attributes, promtext.Metric{}, fmt.Errorf("exponential histogram scale %d below -4", dp.Scale)
		}
		return dp.Attributes, promtext.Metric{Sum: float64(dp.Sum), Count: dp.Count}, nil
	})
}

// promLabels turns attributes into Prometheus labels: invalid characters
// become one underscore, a leading digit gets "key_", and keys that
// collide after that join their values, sorted, with ";".
func promLabels(set *attribute.Set) ([]promtext.Label, error) {
	if set.Len() == 0 {
		return nil, nil
	}
	var labels []promtext.Label
	idx := map[string]int{}
	var vals [][]string
	for it := set.Iter(); it.Next(); {
		kv := it.Attribute()
		name, err := promLabelName(string(kv.Key))
		if err != nil {
			return nil, err
		}
		if i, ok := idx[name]; ok {
			vals[i] = append(vals[i], kv.Value.String())
			continue
		}
		idx[name] = len(labels)
		labels = append(labels, promtext.Label{Name: name})
		vals = append(vals, []string{kv.Value.String()})
	}
	for i := range labels {
		slices.Sort(vals[i])
		labels[i].Value = strings.Join(vals[i], ";")
	}
	return labels, nil
}

func promLabelName(key string) (string, error) {
	if key == "" {
		return "", errors.New("observe: empty attribute key")
	}
	reserved := len(key) >= 4 && strings.HasPrefix(key, "__") && strings.HasSuffix(key, "__")
	if reserved {
		key = key[2 : len(key)-2]
	}
	var b strings.Builder
	under := false
	for _, r := range key {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
			under = false
		} else if !under {
			b.WriteByte('_')
			under = true
		}
	}
	name := b.String()
	if reserved {
		name = "__" + name + "__"
	}
	if name != "" && unicode.IsDigit(rune(name[0])) {
		name = "key_" + name
	}
	if strings.Trim(name, "_") == "" {
		return "", fmt.Errorf("observe: attribute key %q has no Prometheus label name", key)
	}
	return name, nil
}

// promName is the OTel-to-Prometheus metric name with suffixes: runs of
// characters other than [a-zA-Z0-9:] split the name into tokens joined by
// "_", the unit's Prometheus word (seconds, bytes, ...; an annotation in
// braces adds nothing) and a per-unit ("per_second") are appended unless
// already there, counters end in _total and unit "1" gauges in _ratio.
func promName(name, unit string, kind naming) string {
	tokens := strings.FieldsFunc(name, func(r rune) bool { return !validNameChar(r) })
	main, per := unitSuffixes(unit)
	main, per = cleanUnit(main), cleanUnit(per)
	if slices.Contains(tokens, main) {
		main = ""
	}
	if per == "per_" {
		per = ""
	} else {
		per = strings.TrimSuffix(per, "_")
		if slices.Contains(tokens, per) {
			per = ""
		}
	}
	if per != "" {
		main = strings.TrimSuffix(main, "_")
	}
	if main != "" {
		tokens = append(tokens, main)
	}
	if per != "" {
		tokens = append(tokens, per)
	}
	if kind == namingCounter {
		tokens = append(slices.DeleteFunc(tokens, func(t string) bool { return t == "total" }), "total")
	}
	if unit == "1" && kind == namingGauge {
		tokens = append(slices.DeleteFunc(tokens, func(t string) bool { return t == "ratio" }), "ratio")
	}
	out := strings.Join(tokens, "_")
	if out != "" && unicode.IsDigit(rune(out[0])) {
		out = "_" + out
	}
	return out
}

func validNameChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == ':'
}

func unitSuffixes(unit string) (main, per string) {
	mainU, perU, hasPer := strings.Cut(unit, "/")
	if m := strings.TrimSpace(mainU); m != "" && !strings.ContainsAny(m, "{}") {
		main = unitWord(m, mainUnits)
	}
	if hasPer && perU != "" {
		if p := strings.TrimSpace(perU); p != "" && !strings.ContainsAny(p, "{}") {
			per = unitWord(p, perUnits)
		}
		if per != "" {
			per = "per_" + per
		}
	}
	return main, per
}

// The UCUM units Prometheus spells out (the OTel compatibility spec's
// table); a switch rather than a map keeps them out of the process's
// start-up.
func unitWord(u string, table func(string) (string, bool)) string {
	if w, ok := table(u); ok {
		return w
	}
	return u
}

func mainUnits(u string) (string, bool) {
	switch u {
	case "d":
		return "days", true
	case "h":
		return "hours", true
	case "min":
		return "minutes", true
	case "s":
		return "seconds", true
	case "ms":
		return "milliseconds", true
	case "us":
		return "microseconds", true
	case "ns":
		return "nanoseconds", true
	case "By":
		return "bytes", true
	case "KiBy":
		return "kibibytes", true
	case "MiBy":
		return "mebibytes", true
	case "GiBy":
		return "gibibytes", true
	case "TiBy":
		return "tibibytes", true
	case "KBy":
		return "kilobytes", true
	case "MBy":
		return "megabytes", true
	case "GBy":
		return "gigabytes", true
	case "TBy":
		return "terabytes", true
	case "m":
		return "meters", true
	case "V":
		return "volts", true
	case "A":
		return "amperes", true
	case "J":
		return "joules", true
	case "W":
		return "watts", true
	case "g":
		return "grams", true
	case "Cel":
		return "celsius", true
	case "Hz":
		return "hertz", true
	case "1":
		return "", true
	case "%":
		return "percent", true
	}
	return "", false
}

func perUnits(u string) (string, bool) {
	switch u {
	case "s":
		return "second", true
	case "m":
		return "minute", true
	case "h":
		return "hour", true
	case "d":
		return "day", true
	case "w":
		return "week", true
	case "mo":
		return "month", true
	case "y":
		return "year", true
	}
	return "", false
}

// cleanUnit replaces invalid characters with "_", collapses runs of "_"
// and drops a leading one.
func cleanUnit(u string) string {
	var b strings.Builder
	under := false
	for _, r := range u {
		if !validNameChar(r) {
			r = '_'
		}
		if r == '_' {
			if under {
				continue
			}
			under = true
		} else {
			under = false
		}
		b.WriteRune(r)
	}
	return strings.TrimPrefix(b.String(), "_")
}
