package failover

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

func TestParseLooseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"1.574s", 1574 * time.Millisecond},
		{"644ms", 644 * time.Millisecond},
		{"6m0s", 6 * time.Minute},
		{"12h34m16s", 12*time.Hour + 34*time.Minute + 16*time.Second},
		{"30 seconds", 30 * time.Second},
		{"2 hours", 2 * time.Hour},
		{"1 minute 30 secs", 90 * time.Second},
		{"soon", 0},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := parseLooseDuration(tt.in); got != tt.want {
				t.Errorf("parseLooseDuration(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestReadHints(t *testing.T) {
	now := testNow()
	tests := []struct {
		name         string
		h            http.Header
		text         string
		wantRetry    time.Duration
		wantReset    time.Time
		wantSpecific bool
	}{
		{name: "retry-after-ms beats Retry-After", h: hdr("retry-after-ms", "1500", "Retry-After", "9"),
			wantRetry: 1500 * time.Millisecond, wantSpecific: true},
		{name: "Retry-After as HTTP date", h: hdr("Retry-After", now.Add(45*time.Second).Format(http.TimeFormat)),
			wantRetry: 45 * time.Second, wantSpecific: true},
		{name: "body: Please retry in 1.5s", text: "please retry in 1.5s.", wantRetry: 1500 * time.Millisecond, wantSpecific: true},
		{name: "body: try again in 20s", text: "rate limited; try again in 20s", wantRetry: 20 * time.Second, wantSpecific: true},
		{name: "body: quota will reset after", text: "you have exhausted your capacity on this model. your quota will reset after 2h30m0s.",
			wantReset: now.Add(150 * time.Minute), wantSpecific: true},
		{name: "rate-limit headers alone are not specific", h: hdr("x-ratelimit-reset-requests", "1s", "x-ratelimit-remaining-requests", "0"),
			wantReset: now.Add(time.Second)},
		{name: "anthropic unified reset in epoch seconds", h: hdr("anthropic-ratelimit-unified-reset", strconv.FormatInt(now.Add(time.Hour).Unix(), 10)),
			wantReset: now.Add(time.Hour)},
		{name: "X-RateLimit-Reset in epoch milliseconds", h: hdr("X-RateLimit-Reset", strconv.FormatInt(now.Add(10*time.Minute).UnixMilli(), 10), "X-RateLimit-Remaining", "0"),
			wantReset: now.Add(10 * time.Minute)},
		{name: "the window that ran out wins over a later one", h: hdr(
			"x-ratelimit-reset-requests", "10m", "x-ratelimit-remaining-requests", "12",
			"x-ratelimit-reset-tokens", "3s", "x-ratelimit-remaining-tokens", "0"),
			wantReset: now.Add(3 * time.Second)},
		{name: "a reset in the past is ignored", h: hdr("anthropic-ratelimit-tokens-reset", now.Add(-time.Minute).Format(time.RFC3339))},
		{name: "connection reset is not a reset hint", text: "read: connection reset by peer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readHints(tt.h, nil, tt.text, now)
			if got.retryAfter != tt.wantRetry {
				t.Errorf("retryAfter = %v, want %v", got.retryAfter, tt.wantRetry)
			}
			if !got.resetAt.Equal(tt.wantReset) {
				t.Errorf("resetAt = %v, want %v", got.resetAt, tt.wantReset)
			}
			if got.specific != tt.wantSpecific {
				t.Errorf("specific = %v, want %v", got.specific, tt.wantSpecific)
			}
		})
	}
}

func TestParseBodyUnwrapsLayers(t *testing.T) {
	tests := []struct {
		name         string
		body         string
		wantLayers   int
		wantInnerMsg string
		wantUpstream bool
	}{
		{"openrouter raw text", orUpstreamText, 2, "z-ai/glm-5.3-flash is temporarily rate-limited upstream.", true},
		{"openrouter raw json", orUpstreamJSON, 2, "Resource exhausted", true},
		{"vertex message json", vertexSignature, 2, "messages.1.content.0: Invalid `signature` in `thinking` block", false},
		{"gateway upstream_error", hubSignature, 2, "messages.1.content.0: Invalid `signature` in `thinking` block", true},
		{"gemini list", geminiExhausted, 1, "Resource has been exhausted (e.g. check quota).", false},
		{"ollama string error", ollamaNative, 1, `model "llama2" not found, try pulling it first`, false},
		{"not json", "<html>502</html>", 0, "", false},
		{"json without an error", `{"id":"chatcmpl-1","choices":[]}`, 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			layers := parseBody([]byte(tt.body))
			if len(layers) != tt.wantLayers {
				t.Fatalf("got %d layers %+v, want %d", len(layers), layers, tt.wantLayers)
			}
			if tt.wantLayers == 0 {
				return
			}
			inner := layers[len(layers)-1]
			if !contains(inner.Message, tt.wantInnerMsg) {
				t.Errorf("inner message = %q, want it to contain %q", inner.Message, tt.wantInnerMsg)
			}
			if inner.Upstream != tt.wantUpstream {
				t.Errorf("inner Upstream = %v, want %v", inner.Upstream, tt.wantUpstream)
			}
		})
	}
}

func TestParseBodyStopsOnDeepNesting(t *testing.T) {
	// A pathological body that nests error documents without end must not
	// recurse without bound.
	body := `{"error":{"message":"x"}}`
	for range 12 {
		body = `{"error":{"message":"wrapped","metadata":{"raw":` + strconv.Quote(body) + `}}}`
	}
	if n := len(parseBody([]byte(body))); n > maxUnwrap+2 {
		t.Errorf("parsed %d layers, want at most %d", n, maxUnwrap+2)
	}
}
