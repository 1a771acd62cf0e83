//go:build !otlpgrpc

package observe_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/observe"
)

// Without -tags otlpgrpc, asking for OTLP over gRPC is a clear error that
// says how to get it, from config or from the environment.
func TestGRPCNeedsBuildTag(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    observe.Settings
		env  map[string]string
	}{
		{"config", observe.Settings{Endpoint: "http://127.0.0.1:4317", Protocol: "grpc"}, nil},
		{"environment", observe.Settings{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := observe.Setup(context.Background(), tc.s, func(k string) string { return tc.env[k] })
			if !errors.Is(err, observe.ErrGRPCNotBuilt) || !strings.Contains(err.Error(), "-tags otlpgrpc") {
				t.Fatalf("err = %v", err)
			}
		})
	}
}
