package observe

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/talaria-agent/talaria/turn"
)

// Settings is the telemetry configuration (config.yaml's telemetry section
// and the process's own facts). The standard OTEL_* environment variables
// override it: OTEL_EXPORTER_OTLP_ENDPOINT alone turns export on.
type Settings struct {
	// Endpoint is the OTLP endpoint ("http://localhost:4318" for
	// http/protobuf, "http://localhost:4317" for grpc); "" exports nothing
	// unless OTEL_EXPORTER_OTLP_ENDPOINT is set.
	Endpoint string
	// Protocol is "http/protobuf" (default) or "grpc".
	Protocol string
	Headers  map[string]string
	// ServiceName defaults to "talaria".
	ServiceName    string
	ServiceVersion string
	// Capture and MaxContent: see Options.
	Capture    string
	MaxContent int
	// Disabled turns telemetry off whatever the environment says.
	Disabled bool
	// OwnKeys are the API keys Talaria holds (never recorded).
	OwnKeys []string
	// Readers are extra metric readers on the same MeterProvider (the
	// gateway's Prometheus /metrics: NewPromReader), so every exporter
	// reads the same instruments.
	Readers []sdkmetric.Reader
	// Spans: see Options.Spans.
	Spans SpanStore
	// ExportInterval is how often metrics are pushed (default 60s, or
	// OTEL_METRIC_EXPORT_INTERVAL in ms).
	ExportInterval time.Duration
}

// Telemetry is the configured pipeline. Observer is nil when nothing is
// exported: the engine then observes nothing, at no cost.
type Telemetry struct {
	Observer turn.Observer
	// MeterProvider is nil unless metrics are read or exported.
	MeterProvider metric.MeterProvider
	// Endpoint and Protocol say where spans go ("" when nowhere).
	Endpoint, Protocol string

	tp *sdktrace.TracerProvider
	mp *sdkmetric.MeterProvider
}

// Setup builds the exporters the settings and environment ask for.
// getenv reads the environment (os.Getenv in the CLI). Only the OTLP
// endpoint, protocol, service name and export switches are read through
// it; the exporters read the remaining OTEL_* variables (headers,
// timeouts, TLS, OTEL_TRACES_SAMPLER, OTEL_RESOURCE_ATTRIBUTES) as the
// OpenTelemetry SDK does (the http/protobuf exporter is this package's own:
// OTEL_EXPORTER_OTLP_[TRACES_|METRICS_]HEADERS, TIMEOUT, COMPRESSION,
// CERTIFICATE, CLIENT_CERTIFICATE and CLIENT_KEY are read through getenv).
func Setup(ctx context.Context, s Settings, getenv func(string) string) (*Telemetry, error) {
	t := &Telemetry{}
	if s.Disabled || strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return t, nil
	}
	capture, err := ParseCapture(s.Capture)
	if err != nil {
		return nil, err
	}
	traceEP := firstOf(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), signalURL(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "traces"))
	metricEP := firstOf(getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"), signalURL(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "metrics"))
	if traceEP == "" && metricEP == "" && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && s.Endpoint != "" {
		traceEP, metricEP = signalURL(s.Endpoint, "traces"), signalURL(s.Endpoint, "metrics")
	}
	if strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		traceEP = ""
	}
	if strings.EqualFold(getenv("OTEL_METRICS_EXPORTER"), "none") {
		metricEP = ""
	}
	if traceEP == "" && metricEP == "" && len(s.Readers) == 0 {
		return t, nil
	}
	for _, ep := range []string{traceEP, metricEP} {
		if u, perr := url.Parse(ep); ep != "" && (perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
			return nil, fmt.Errorf("telemetry: OTLP endpoint %q is not a URL: use http://HOST:PORT or https://HOST:PORT (OTEL_EXPORTER_OTLP_ENDPOINT or telemetry.endpoint)", ep)
		}
	}
	traceProto := protocol(firstOf(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), s.Protocol))
	metricProto := protocol(firstOf(getenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"), getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), s.Protocol))
	for _, p := range []string{traceProto, metricProto} {
		if p != "http/protobuf" && p != "grpc" {
			return nil, fmt.Errorf("telemetry: OTLP protocol %q is not supported: use http/protobuf or grpc", p)
		}
		if p == "grpc" && !grpcBuilt {
			return nil, ErrGRPCNotBuilt
		}
	}
	res, err := newResource(ctx, s, getenv)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = t.Shutdown(context.Background())
		}
	}()
	if traceEP != "" {
		var exp sdktrace.SpanExporter
		exp, err = traceExporter(ctx, traceProto, traceEP, s.Headers, getenv)
		if err != nil {
			return nil, fmt.Errorf("telemetry: trace exporter for %s: %w", traceEP, err)
		}
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		t.Endpoint, t.Protocol = traceEP, traceProto
	}
	readers := append([]sdkmetric.Reader(nil), s.Readers...)
	if metricEP != "" {
		var exp sdkmetric.Exporter
		exp, err = metricExporter(ctx, metricProto, metricEP, s.Headers, getenv)
		if err != nil {
			return nil, fmt.Errorf("telemetry: metric exporter for %s: %w", metricEP, err)
		}
		var opts []sdkmetric.PeriodicReaderOption
		if s.ExportInterval > 0 {
			opts = append(opts, sdkmetric.WithInterval(s.ExportInterval))
		}
		readers = append(readers, sdkmetric.NewPeriodicReader(exp, opts...))
	}
	if len(readers) > 0 {
		opts := []sdkmetric.Option{sdkmetric.WithResource(res)}
		for _, r := range readers {
			opts = append(opts, sdkmetric.WithReader(r))
		}
		t.mp = sdkmetric.NewMeterProvider(opts...)
		t.MeterProvider = t.mp
	}
	o := Options{Capture: capture, MaxContent: s.MaxContent, OwnKeys: s.OwnKeys, Spans: s.Spans}
	if t.tp != nil {
		o.TracerProvider = t.tp
	}
	if t.mp != nil {
		o.MeterProvider = t.mp
	}
	var obs *Observer
	obs, err = New(o)
	if err != nil {
		return nil, err
	}
	t.Observer = obs
	return t, nil
}

// Shutdown flushes and stops the exporters; call it before the process
// exits so a short `talaria run` still delivers its spans.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	return t.eachProvider(ctx, provider.Shutdown)
}

// ForceFlush exports what is buffered now.
func (t *Telemetry) ForceFlush(ctx context.Context) error {
	return t.eachProvider(ctx, provider.ForceFlush)
}

// provider is what the trace and metric SDK providers both do.
type provider interface {
	Shutdown(ctx context.Context) error
	ForceFlush(ctx context.Context) error
}

// eachProvider calls op on the providers t set up, joining their errors.
func (t *Telemetry) eachProvider(ctx context.Context, op func(provider, context.Context) error) error {
	if t == nil {
		return nil
	}
	var errs []error
	if t.tp != nil {
		errs = append(errs, op(t.tp, ctx))
	}
	if t.mp != nil {
		errs = append(errs, op(t.mp, ctx))
	}
	return errors.Join(errs...)
}

func newResource(ctx context.Context, s Settings, getenv func(string) string) (*resource.Resource, error) {
	name := firstOf(getenv("OTEL_SERVICE_NAME"), s.ServiceName, "talaria")
	attrs := []attribute.KeyValue{attribute.String("service.name", name)}
	if s.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", s.ServiceVersion))
	}
	// Later options win: the SDK's environment detector (OTEL_SERVICE_NAME,
	// OTEL_RESOURCE_ATTRIBUTES) overrides the defaults, and the service
	// name read through getenv overrides both.
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(attrs...),
		resource.WithFromEnv(),
		resource.WithAttributes(attribute.String("service.name", name)),
	)
	if err != nil && res == nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return res, nil
}

func traceExporter(ctx context.Context, proto, endpoint string, headers map[string]string, getenv func(string) string) (sdktrace.SpanExporter, error) {
	if proto == "grpc" {
		return grpcTraceExporter(ctx, endpoint, headers)
	}
	return httpTraceExporter(ctx, endpoint, headers, getenv)
}

func metricExporter(ctx context.Context, proto, endpoint string, headers map[string]string, getenv func(string) string) (sdkmetric.Exporter, error) {
	if proto == "grpc" {
		return grpcMetricExporter(ctx, endpoint, headers)
	}
	return httpMetricExporterFor(endpoint, headers, getenv)
}

// signalURL turns a base OTLP endpoint into a signal's URL for
// http/protobuf, as the OTLP exporter spec says (base + /v1/traces). A grpc
// endpoint ignores the path, so the same URL serves both.
func signalURL(base, signal string) string {
	if base == "" {
		return ""
	}
	return strings.TrimRight(base, "/") + "/v1/" + signal
}

func protocol(p string) string {
	if p == "" {
		return "http/protobuf"
	}
	return strings.ToLower(p)
}

func firstOf(vals ...string) string {
	for _, v := range vals {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}
