package gemini

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/talaria-agent/talaria/bench/benchscript"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/toolcache"
)

// BenchmarkCallBySessionSize is the per-call request work of a long
// session for the Gemini body (see benchscript.CallBySessionSize): "full"
// is the adapter's whole-history encoder, "incremental" the engine's path.
func BenchmarkCallBySessionSize(b *testing.B) {
	var tc toolcache.Cache
	benchscript.CallBySessionSize(b,
		func(req *llm.Request) ([]byte, error) { return encodeRequest(req, 0, nil) },
		func(req *llm.Request) ([]byte, string, error) { return encodeIncremental(req, 0, &tc) })
}

// BenchmarkSDKCallBySessionSize is BenchmarkCallBySessionSize with "full"
// the path before the adapter encoded its own bodies: the request built as
// genai contents and encoded by the SDK (maps, sorted keys) on every call.
// The SDK's transport is a RoundTripper that reads the body and answers a
// finished stream, so no network is measured.
func BenchmarkSDKCallBySessionSize(b *testing.B) {
	var body []byte
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "k", Backend: genai.BackendGeminiAPI,
		HTTPClient: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			body, _ = io.ReadAll(r.Body)
			const sse = `data: {"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP"}]}` + "\n\n"
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
				Body: io.NopCloser(strings.NewReader(sse)), Request: r}, nil
		})},
		HTTPOptions: genai.HTTPOptions{BaseURL: "http://127.0.0.1:1/", APIVersion: "v1beta"},
	})
	if err != nil {
		b.Fatal(err)
	}
	var tc toolcache.Cache
	benchscript.CallBySessionSize(b,
		func(req *llm.Request) ([]byte, error) {
			contents, config, err := sdkBuildRequest(req, 0)
			if err != nil {
				return nil, err
			}
			for _, err := range client.Models.GenerateContentStream(context.Background(), req.Model, contents, config) {
				if err != nil {
					return nil, err
				}
			}
			return bytes.Clone(body), nil
		},
		func(req *llm.Request) ([]byte, string, error) { return encodeIncremental(req, 0, &tc) })
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
