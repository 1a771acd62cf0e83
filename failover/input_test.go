package failover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
)

func TestInputFromError(t *testing.T) {
	apiErr := &llm.APIError{
		Provider: "anthropic", Model: "claude-sonnet-4-5", StatusCode: 529,
		Header: hdr("retry-after", "3"), Body: []byte(anthOverloaded), Message: "Overloaded",
	}
	tests := []struct {
		name          string
		err           error
		wantClass     Class
		wantTransport llm.TransportKind
		check         func(t *testing.T, in Input)
	}{
		{name: "wrapped APIError keeps every field", err: fmt.Errorf("turn 3: %w", apiErr), wantClass: ClassOverloaded,
			check: func(t *testing.T, in Input) {
				if in.Provider != "anthropic" || in.Model != "claude-sonnet-4-5" || in.Status != 529 ||
					string(in.Body) != anthOverloaded || in.Header.Get("retry-after") != "3" {
					t.Errorf("fields not copied: %+v", in)
				}
			}},
		{name: "context.Canceled", err: context.Canceled, wantClass: ClassCanceled, wantTransport: llm.TransportCanceled},
		{name: "APIError caused by our cancel is not the provider's failure",
			err:       &llm.APIError{Provider: "openai", Transport: llm.TransportReset, Err: fmt.Errorf("read: %w", context.Canceled)},
			wantClass: ClassCanceled, wantTransport: llm.TransportCanceled},
		{name: "cancel while a stream was running",
			err:       &llm.APIError{Provider: "openai", StatusCode: 200, MidStream: true, Err: context.Canceled},
			wantClass: ClassCanceled, wantTransport: llm.TransportCanceled},
		{name: "deadline is a timeout", err: fmt.Errorf("call: %w", context.DeadlineExceeded), wantClass: ClassTimeout, wantTransport: llm.TransportTimeout},
		{name: "transport kind from the adapter", err: &llm.APIError{Provider: "x", Transport: llm.TransportTLSCert, Err: errors.New("x509: certificate signed by unknown authority")},
			wantClass: ClassSSLCert, wantTransport: llm.TransportTLSCert,
			check: func(t *testing.T, in Input) {
				if in.Message == "" {
					t.Error("the cause's text should fill an empty Message")
				}
			}},
		{name: "plain error keeps its text", err: errors.New("dial tcp: lookup api.example.com: no such host"), wantClass: ClassTimeout,
			check: func(t *testing.T, in Input) {
				if in.Message != "dial tcp: lookup api.example.com: no such host" {
					t.Errorf("Message = %q", in.Message)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := InputFromError(tt.err)
			if in.Transport != tt.wantTransport {
				t.Errorf("Transport = %q, want %q", in.Transport, tt.wantTransport)
			}
			if got := ClassifyError(tt.err).Class; got != tt.wantClass {
				t.Errorf("class = %s, want %s", got, tt.wantClass)
			}
			if tt.check != nil {
				tt.check(t, in)
			}
		})
	}
	if in := InputFromError(nil); in.Message != "" || in.Transport != "" {
		t.Errorf("InputFromError(nil) = %+v, want zero", in)
	}
}

func TestClassifiedJSON(t *testing.T) {
	c := Classify(Input{Provider: "openai", Model: "gpt-4o", Status: 429, Body: []byte(openAIRateLimit), Now: testNow(),
		Header: hdr("x-ratelimit-reset-tokens", "6m0s", "x-ratelimit-remaining-tokens", "0")})
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"class", "retryable", "should_rotate_credential", "should_fallback", "should_compress",
		"billing_unverified", "certain", "retry_after_ms", "output_cap_limit", "summary", "advice"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks key %q: %s", k, b)
		}
	}
	if m["class"] != "rate_limit" || m["retry_after_ms"] != float64(1574) || m["should_rotate_credential"] != true {
		t.Errorf("unexpected values: %s", b)
	}
	if m["reset_at"] != testNow().Add(6*time.Minute).Format(time.RFC3339) {
		t.Errorf("reset_at = %v", m["reset_at"])
	}
	var back Classified
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Class != c.Class || back.RetryAfter != c.RetryAfter || !back.ResetAt.Equal(c.ResetAt) || back.Summary != c.Summary {
		t.Errorf("round trip changed the verdict: %+v vs %+v", back, c)
	}
}

// The wire API and base URL come from the adapter's error: an Anthropic
// body whose {"type":"error"} envelope a proxy stripped is read as
// Anthropic's only because the anthropic adapter says so, and a refused
// connection names the endpoint the adapter called. A plain error names
// neither and classifies by its text alone, as before.
func TestInputFromErrorWireAPI(t *testing.T) {
	const (
		notFound = `{"error":{"type":"not_found_error","message":"model: claude-3-opus-latest"}}`
		tooLarge = `{"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}`
	)
	tests := []struct {
		name      string
		err       error
		wantAPI   string
		wantBase  string
		wantClass Class
	}{
		{name: "anthropic 404 not_found_error", wantAPI: "anthropic", wantBase: "https://api.anthropic.com", wantClass: ClassModelNotFound,
			err: fmt.Errorf("call: %w", &llm.APIError{Provider: "p", API: "anthropic", BaseURL: "https://api.anthropic.com", StatusCode: 404, Body: []byte(notFound)})},
		{name: "openai 404 of the same body", wantAPI: "openai", wantBase: "http://127.0.0.1:8000/v1", wantClass: ClassEndpointNotFound,
			err: &llm.APIError{Provider: "p", API: "openai", BaseURL: "http://127.0.0.1:8000/v1", StatusCode: 404, Body: []byte(notFound)}},
		{name: "anthropic 400 request_too_large", wantAPI: "anthropic", wantBase: "https://api.anthropic.com", wantClass: ClassPayloadTooLarge,
			err: &llm.APIError{Provider: "p", API: "anthropic", BaseURL: "https://api.anthropic.com", StatusCode: 400, Body: []byte(tooLarge)}},
		{name: "openai-responses 400 of the same body", wantAPI: "openai-responses", wantBase: "https://api.openai.com/v1", wantClass: ClassFormatError,
			err: &llm.APIError{Provider: "p", API: "openai-responses", BaseURL: "https://api.openai.com/v1", StatusCode: 400, Body: []byte(tooLarge)}},
		{name: "plain error", wantClass: ClassUnknown, err: errors.New(notFound)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := InputFromError(tt.err)
			if in.API != tt.wantAPI || in.BaseURL != tt.wantBase {
				t.Errorf("API %q BaseURL %q; want %q %q", in.API, in.BaseURL, tt.wantAPI, tt.wantBase)
			}
			c := Classify(in)
			if c.Class != tt.wantClass {
				t.Errorf("class = %s, want %s", c.Class, tt.wantClass)
			}
			if c.BaseURL != tt.wantBase {
				t.Errorf("Classified.BaseURL = %q, want %q", c.BaseURL, tt.wantBase)
			}
		})
	}

	refused := &llm.APIError{Provider: "local", API: "openai", BaseURL: "http://127.0.0.1:9/v1", Transport: llm.TransportConnect,
		Err: errors.New("dial tcp 127.0.0.1:9: connect: connection refused")}
	if advice := ClassifyError(refused).Advice; !strings.Contains(advice, "Could not connect to local at http://127.0.0.1:9/v1") {
		t.Errorf("advice does not name the adapter's endpoint: %s", advice)
	}
}
