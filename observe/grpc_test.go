//go:build otlpgrpc

package observe_test

import (
	"context"
	"net"
	"sync"
	"testing"

	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/observe"
	"github.com/talaria-agent/talaria/turn"
)

type grpcTraces struct {
	colltrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	names []string
}

func (g *grpcTraces) Export(_ context.Context, req *colltrace.ExportTraceServiceRequest) (*colltrace.ExportTraceServiceResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				g.names = append(g.names, s.Name)
			}
		}
	}
	return &colltrace.ExportTraceServiceResponse{}, nil
}

// OTEL_EXPORTER_OTLP_PROTOCOL=grpc sends the same spans over OTLP/gRPC.
func TestGRPCExport(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	recv := &grpcTraces{}
	colltrace.RegisterTraceServiceServer(srv, recv)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	env := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + lis.Addr().String(),
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_METRICS_EXPORTER":       "none",
	}
	tel, err := observe.Setup(context.Background(), observe.Settings{}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if tel.Protocol != "grpc" {
		t.Fatalf("protocol %q", tel.Protocol)
	}
	e := testenv.New(t, testenv.Options{NoBuiltins: true, Configure: func(c *agent.Config) { c.Observer = tel.Observer }})
	e.Srv.Script(fakellm.Text("hi"))
	if res := e.Run("hello"); res.Exit != turn.ExitCompleted {
		t.Fatalf("turn: %s", res.Exit)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if len(recv.names) != 2 || recv.names[0] != "chat test-model" || recv.names[1] != "turn" {
		t.Fatalf("gRPC collector got %v", recv.names)
	}
}
