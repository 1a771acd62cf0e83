//go:build otlpgrpc

package observe

import (
	"context"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// grpcBuilt says this binary can export over OTLP/gRPC (built with
// -tags otlpgrpc).
const grpcBuilt = true

// ErrGRPCNotBuilt is never returned by a binary built with -tags otlpgrpc.
var ErrGRPCNotBuilt error

func grpcTraceExporter(ctx context.Context, endpoint string, headers map[string]string) (sdktrace.SpanExporter, error) {
	opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(endpoint)}
	if len(headers) > 0 {
		opts = append(opts, otlptracegrpc.WithHeaders(headers))
	}
	return otlptracegrpc.New(ctx, opts...)
}

func grpcMetricExporter(ctx context.Context, endpoint string, headers map[string]string) (sdkmetric.Exporter, error) {
	opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpointURL(endpoint)}
	if len(headers) > 0 {
		opts = append(opts, otlpmetricgrpc.WithHeaders(headers))
	}
	return otlpmetricgrpc.New(ctx, opts...)
}
