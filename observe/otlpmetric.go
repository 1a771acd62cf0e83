package observe

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// This file converts the metric SDK's data model to OTLP's protobuf
// messages (the otlpmetric exporters' conversion, which lives in their
// internal packages next to the collector's gRPC stubs).

func resourceMetricsPB(rm *metricdata.ResourceMetrics) *metricpb.ResourceMetrics {
	out := &metricpb.ResourceMetrics{Resource: resourcePB(rm.Resource), SchemaUrl: rm.Resource.SchemaURL()}
	for _, sm := range rm.ScopeMetrics {
		ms := make([]*metricpb.Metric, 0, len(sm.Metrics))
		for _, m := range sm.Metrics {
			if pm := metricPB(m); pm != nil {
				ms = append(ms, pm)
			}
		}
		out.ScopeMetrics = append(out.ScopeMetrics, &metricpb.ScopeMetrics{Scope: scopePB(sm.Scope), Metrics: ms, SchemaUrl: sm.Scope.SchemaURL})
	}
	return out
}

func resourcePB(r *resource.Resource) *resourcepb.Resource {
	if r == nil {
		return &resourcepb.Resource{}
	}
	return &resourcepb.Resource{Attributes: keyValuesPB(r.Attributes())}
}

func scopePB(s instrumentation.Scope) *commonpb.InstrumentationScope {
	return &commonpb.InstrumentationScope{Name: s.Name, Version: s.Version, Attributes: keyValuesPB(s.Attributes.ToSlice())}
}

// metricPB converts one metric; nil for an aggregation OTLP cannot carry.
func metricPB(m metricdata.Metrics) *metricpb.Metric {
	out := &metricpb.Metric{Name: m.Name, Description: m.Description, Unit: m.Unit}
	switch a := m.Data.(type) {
	case metricdata.Gauge[int64]:
		out.Data = &metricpb.Metric_Gauge{Gauge: &metricpb.Gauge{DataPoints: numberPoints(a.DataPoints)}}
	case metricdata.Gauge[float64]:
		out.Data = &metricpb.Metric_Gauge{Gauge: &metricpb.Gauge{DataPoints: numberPoints(a.DataPoints)}}
	case metricdata.Sum[int64]:
		out.Data = &metricpb.Metric_Sum{Sum: &metricpb.Sum{DataPoints: numberPoints(a.DataPoints), AggregationTemporality: temporalityPB(a.Temporality), IsMonotonic: a.IsMonotonic}}
	case metricdata.Sum[float64]:
		out.Data = &metricpb.Metric_Sum{Sum: &metricpb.Sum{DataPoints: numberPoints(a.DataPoints), AggregationTemporality: temporalityPB(a.Temporality), IsMonotonic: a.IsMonotonic}}
	case metricdata.Histogram[int64]:
		out.Data = &metricpb.Metric_Histogram{Histogram: &metricpb.Histogram{DataPoints: histogramPoints(a.DataPoints), AggregationTemporality: temporalityPB(a.Temporality)}}
	case metricdata.Histogram[float64]:
		out.Data = &metricpb.Metric_Histogram{Histogram: &metricpb.Histogram{DataPoints: histogramPoints(a.DataPoints), AggregationTemporality: temporalityPB(a.Temporality)}}
	case metricdata.ExponentialHistogram[int64]:
		out.Data = &metricpb.Metric_ExponentialHistogram{ExponentialHistogram: &metricpb.ExponentialHistogram{DataPoints: expPoints(a.DataPoints), AggregationTemporality: temporalityPB(a.Temporality)}}
	case metricdata.ExponentialHistogram[float64]:
		out.Data = &metricpb.Metric_ExponentialHistogram{ExponentialHistogram: &metricpb.ExponentialHistogram{DataPoints: expPoints(a.DataPoints), AggregationTemporality: temporalityPB(a.Temporality)}}
	case metricdata.Summary:
		out.Data = &metricpb.Metric_Summary{Summary: &metricpb.Summary{DataPoints: summaryPoints(a.DataPoints)}}
	default:
		return nil
	}
	return out
}

func temporalityPB(t metricdata.Temporality) metricpb.AggregationTemporality {
	switch t {
	case metricdata.DeltaTemporality:
		return metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	case metricdata.CumulativeTemporality:
		return metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	}
	return metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_UNSPECIFIED
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

func numberPoints[N int64 | float64](dps []metricdata.DataPoint[N]) []*metricpb.NumberDataPoint {
	out := make([]*metricpb.NumberDataPoint, 0, len(dps))
	for _, dp := range dps {
		p := &metricpb.NumberDataPoint{
			Attributes:        keyValuesPB(dp.Attributes.ToSlice()),
			StartTimeUnixNano: unixNano(dp.StartTime),
			TimeUnixNano:      unixNano(dp.Time),
			Exemplars:         exemplarsPB(dp.Exemplars),
		}
		switch v := any(dp.Value).(type) {
		case int64:
			p.Value = &metricpb.NumberDataPoint_AsInt{AsInt: v}
		case float64:
			p.Value = &metricpb.NumberDataPoint_AsDouble{AsDouble: v}
		}
		out = append(out, p)
	}
	return out
}

func extremum[N int64 | float64](e metricdata.Extrema[N]) *float64 {
	v, ok := e.Value()
	if !ok {
		return nil
	}
	f := float64(v)
	return &f
}

func histogramPoints[N int64 | float64](dps []metricdata.HistogramDataPoint[N]) []*metricpb.HistogramDataPoint {
	out := make([]*metricpb.HistogramDataPoint, 0, len(dps))
	for _, dp := range dps {
		sum := float64(dp.Sum)
		out = append(out, &metricpb.HistogramDataPoint{
			Attributes:        keyValuesPB(dp.Attributes.ToSlice()),
			StartTimeUnixNano: unixNano(dp.StartTime),
			TimeUnixNano:      unixNano(dp.Time),
			Count:             dp.Count,
			Sum:               &sum,
			BucketCounts:      dp.BucketCounts,
			ExplicitBounds:    dp.Bounds,
			Min:               extremum(dp.Min),
			Max:               extremum(dp.Max),
			Exemplars:         exemplarsPB(dp.Exemplars),
		})
	}
	return out
}

func expPoints[N int64 | float64](dps []metricdata.ExponentialHistogramDataPoint[N]) []*metricpb.ExponentialHistogramDataPoint {
	out := make([]*metricpb.ExponentialHistogramDataPoint, 0, len(dps))
	for _, dp := range dps {
		sum := float64(dp.Sum)
		out = append(out, &metricpb.ExponentialHistogramDataPoint{
			Attributes:        keyValuesPB(dp.Attributes.ToSlice()),
			StartTimeUnixNano: unixNano(dp.StartTime),
			TimeUnixNano:      unixNano(dp.Time),
			Count:             dp.Count,
			Sum:               &sum,
			Scale:             dp.Scale,
			ZeroCount:         dp.ZeroCount,
			Positive:          &metricpb.ExponentialHistogramDataPoint_Buckets{Offset: dp.PositiveBucket.Offset, BucketCounts: dp.PositiveBucket.Counts},
			Negative:          &metricpb.ExponentialHistogramDataPoint_Buckets{Offset: dp.NegativeBucket.Offset, BucketCounts: dp.NegativeBucket.Counts},
			Min:               extremum(dp.Min),
			Max:               extremum(dp.Max),
			ZeroThreshold:     dp.ZeroThreshold,
			Exemplars:         exemplarsPB(dp.Exemplars),
		})
	}
	return out
}

func summaryPoints(dps []metricdata.SummaryDataPoint) []*metricpb.SummaryDataPoint {
	out := make([]*metricpb.SummaryDataPoint, 0, len(dps))
	for _, dp := range dps {
		qs := make([]*metricpb.SummaryDataPoint_ValueAtQuantile, 0, len(dp.QuantileValues))
		for _, q := range dp.QuantileValues {
			qs = append(qs, &metricpb.SummaryDataPoint_ValueAtQuantile{Quantile: q.Quantile, Value: q.Value})
		}
		out = append(out, &metricpb.SummaryDataPoint{
			Attributes:        keyValuesPB(dp.Attributes.ToSlice()),
			StartTimeUnixNano: unixNano(dp.StartTime),
			TimeUnixNano:      unixNano(dp.Time),
			Count:             dp.Count,
			Sum:               dp.Sum,
			QuantileValues:    qs,
		})
	}
	return out
}

func exemplarsPB[N int64 | float64](es []metricdata.Exemplar[N]) []*metricpb.Exemplar {
	if len(es) == 0 {
		return nil
	}
	out := make([]*metricpb.Exemplar, 0, len(es))
	for _, e := range es {
		p := &metricpb.Exemplar{
			FilteredAttributes: keyValuesPB(e.FilteredAttributes),
			TimeUnixNano:       unixNano(e.Time),
			SpanId:             e.SpanID,
			TraceId:            e.TraceID,
		}
		switch v := any(e.Value).(type) {
		case int64:
			p.Value = &metricpb.Exemplar_AsInt{AsInt: v}
		case float64:
			p.Value = &metricpb.Exemplar_AsDouble{AsDouble: v}
		}
		out = append(out, p)
	}
	return out
}

func keyValuesPB(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: anyValuePB(kv.Value)})
	}
	return out
}

func anyValuePB(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BYTESLICE:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}}
	case attribute.BOOLSLICE:
		return arrayPB(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return arrayPB(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return arrayPB(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return arrayPB(v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		return arrayPB(v.AsSlice(), func(v attribute.Value) attribute.Value { return v })
	case attribute.MAP:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: keyValuesPB(v.AsMap())}}}
	}
	return &commonpb.AnyValue{}
}

func arrayPB[T any](vs []T, wrap func(T) attribute.Value) *commonpb.AnyValue {
	out := make([]*commonpb.AnyValue, 0, len(vs))
	for _, v := range vs {
		out = append(out, anyValuePB(wrap(v)))
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: out}}}
}
