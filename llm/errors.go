package llm

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// TransportKind names a connection-level failure, when there was no HTTP
// answer to classify (or the answer broke off).
type TransportKind string

const (
	TransportNone     TransportKind = ""
	TransportTimeout  TransportKind = "timeout"  // connect or read deadline passed
	TransportConnect  TransportKind = "connect"  // could not connect (refused, DNS)
	TransportReset    TransportKind = "reset"    // connection reset / broken pipe
	TransportEOF      TransportKind = "eof"      // stream ended early
	TransportTLS      TransportKind = "tls"      // transient TLS alert / handshake failure
	TransportTLSCert  TransportKind = "tls-cert" // certificate verification failed
	TransportCanceled TransportKind = "canceled" // the caller's context ended
)

// APIError is a failed API call with everything the classifier needs: who
// failed, the raw HTTP answer (status, headers, body) when there was one, and
// the transport failure when there was not.
type APIError struct {
	Provider string
	Model    string
	// API is the wire format of the call ("openai", "openai-responses",
	// "anthropic", "gemini") and BaseURL the endpoint it went to. The
	// adapter knows both, so the classifier reads provider-specific error
	// shapes and names an unreachable server from the error alone. Empty
	// when no adapter made the error.
	API        string
	BaseURL    string
	StatusCode int         // 0 when no HTTP answer arrived
	Header     http.Header // response headers, nil when none
	Body       []byte      // raw response body, possibly truncated to a sane size
	// Message is the human-readable error text: the provider's message when
	// the body had one, else the client library's text.
	Message   string
	Transport TransportKind
	// MidStream is set when the failure came after the stream had started;
	// PartialText then holds what was already shown, which callers discard.
	MidStream   bool
	PartialText string
	// Malformed marks a successful status whose body is not an answer of
	// the wire format at all (a 200 of {"foo":1}): a wrong or broken
	// server, not an empty answer.
	Malformed bool
	// Err is the underlying cause (a net.Error, context error, SDK error).
	Err error
}

func (e *APIError) Error() string {
	var b strings.Builder
	if e.Provider != "" {
		b.WriteString(e.Provider)
		if e.Model != "" {
			b.WriteString(" (" + e.Model + ")")
		}
		b.WriteString(": ")
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, "HTTP %d", e.StatusCode)
		if e.Message != "" {
			b.WriteString(": ")
		}
	} else if e.Transport != TransportNone {
		b.WriteString(string(e.Transport) + " error")
		if e.Message != "" || e.Err != nil {
			b.WriteString(": ")
		}
	}
	switch {
	case e.Message != "":
		b.WriteString(e.Message)
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	}
	if e.MidStream {
		b.WriteString(" (mid-stream)")
	}
	return b.String()
}

func (e *APIError) Unwrap() error { return e.Err }

// RetryAfter reads the provider's retry hint from the headers: retry-after-ms
// (milliseconds), then Retry-After (seconds or an HTTP date). ok is false when
// there is no usable hint.
func (e *APIError) RetryAfter(now time.Time) (d time.Duration, ok bool) {
	if e == nil || e.Header == nil {
		return 0, false
	}
	return ParseRetryAfter(e.Header, now)
}

// ParseRetryAfter reads retry-after-ms, then Retry-After, from h.
func ParseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}
