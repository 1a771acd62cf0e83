package observe

import (
	"context"
	"strings"
	"testing"
)

// An OTLP endpoint that is not an http(s) URL is refused at setup with a
// message naming it, not accepted and then failing silently at export.
func TestSetupRefusesAnEndpointThatIsNotAURL(t *testing.T) {
	for _, ep := range []string{"not a url", "localhost:4318", "ftp://collector:21"} {
		t.Run(ep, func(t *testing.T) {
			env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep}
			tel, err := Setup(context.Background(), Settings{}, func(k string) string { return env[k] })
			if err == nil {
				_ = tel.Shutdown(context.Background())
				t.Fatalf("endpoint %q accepted", ep)
			}
			if !strings.Contains(err.Error(), "is not a URL") {
				t.Errorf("error %q does not say what is wrong", err)
			}
		})
	}
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
	tel, err := Setup(context.Background(), Settings{}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("a URL endpoint refused: %v", err)
	}
	_ = tel.Shutdown(context.Background())
}
