//go:build !otlpgrpc

package observe

import (
	"context"
	"errors"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// grpcBuilt says this binary can export over OTLP/gRPC. The default build
// cannot: gRPC would cost every command tens of MiB of binary and memory.
const grpcBuilt = false

// ErrGRPCNotBuilt is Setup's error when OTLP over gRPC is asked of a
// binary built without it.
var ErrGRPCNotBuilt = errors.New("telemetry: OTLP over gRPC is not built into this binary: " +
	"use protocol http/protobuf (a collector's port 4318; OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf), " +
	"or build with gRPC export: go install -tags otlpgrpc github.com/talaria-agent/talaria/cmd/talaria@latest")

func grpcTraceExporter(context.Context, string, map[string]string) (sdktrace.SpanExporter, error) {
	return nil, ErrGRPCNotBuilt
}

func grpcMetricExporter(context.Context, string, map[string]string) (sdkmetric.Exporter, error) {
	return nil, ErrGRPCNotBuilt
}
