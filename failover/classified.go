package failover

import (
	"encoding/json"
	"time"

	"github.com/talaria-agent/talaria/llm"
)

// Classified is the verdict on one failed call: its class, the recovery
// flags the retry loop reads, the provider's hints, and words for people.
type Classified struct {
	Class            Class
	Retryable        bool
	RotateCredential bool // should_rotate_credential
	Fallback         bool // should_fallback
	Compress         bool // should_compress
	// RetryAfter is the provider's hint (0 = none), from Retry-After /
	// retry-after-ms headers, a Google RetryInfo, or body text such as
	// "try again in 20s" / "Please retry in 1.5s".
	RetryAfter time.Duration
	// ResetAt is when a quota or rate limit resets, if the error says
	// (x-ratelimit-reset-*, anthropic-ratelimit-*-reset, X-RateLimit-Reset,
	// "resets after 2h"); zero when unknown.
	ResetAt time.Time
	// Certain is false when the verdict is a best guess (an empty 400 on a
	// large session, a bare disconnect, an ambiguous billing message).
	Certain bool
	// BillingUnverified marks a billing verdict read from ambiguous text (an
	// Anthropic 400 "out of extra usage" may be a content filter).
	BillingUnverified     bool
	PossibleContentFilter bool
	// OutputCapLimit is, for ClassOutputCap, the most output tokens the error
	// allows (0 if it could not be parsed).
	OutputCapLimit int
	Status         int
	Provider       string
	Model          string
	// UpstreamProvider names the provider behind an aggregator (OpenRouter's
	// metadata.provider_name), so blame lands where it belongs.
	UpstreamProvider string
	ProviderMessage  string // the provider's own message text, trimmed
	Summary          string // short status-line phrase: "rate limited by openai (429)"
	Advice           string // one sentence a person can act on
	// Transport is the connection-level failure when no HTTP answer came;
	// Connect says why no connection could be made, and BaseURL where, for
	// Transport connect. Not part of the JSON form.
	Transport llm.TransportKind
	Connect   llm.ConnectCause
	BaseURL   string
	// NoKeyHint is Input.NoKeyHint: no key was sent, and how to send one.
	NoKeyHint string
	// Malformed: the answer was not of the wire format (Input.Malformed).
	Malformed bool
}

// classifiedJSON is the wire shape of `talaria explain-error --json`.
type classifiedJSON struct {
	Class                 Class  `json:"class"`
	Retryable             bool   `json:"retryable"`
	RotateCredential      bool   `json:"should_rotate_credential"`
	Fallback              bool   `json:"should_fallback"`
	Compress              bool   `json:"should_compress"`
	RetryAfterMS          int64  `json:"retry_after_ms"`
	ResetAt               string `json:"reset_at,omitempty"`
	Certain               bool   `json:"certain"`
	BillingUnverified     bool   `json:"billing_unverified"`
	PossibleContentFilter bool   `json:"possible_content_filter"`
	OutputCapLimit        int    `json:"output_cap_limit"`
	Status                int    `json:"status"`
	Provider              string `json:"provider,omitempty"`
	Model                 string `json:"model,omitempty"`
	UpstreamProvider      string `json:"upstream_provider,omitempty"`
	ProviderMessage       string `json:"provider_message,omitempty"`
	Summary               string `json:"summary"`
	Advice                string `json:"advice"`
}

// MarshalJSON writes snake_case keys, RetryAfter as milliseconds and ResetAt
// as RFC 3339.
func (c Classified) MarshalJSON() ([]byte, error) {
	j := classifiedJSON{
		Class: c.Class, Retryable: c.Retryable, RotateCredential: c.RotateCredential,
		Fallback: c.Fallback, Compress: c.Compress, RetryAfterMS: c.RetryAfter.Milliseconds(),
		Certain: c.Certain, BillingUnverified: c.BillingUnverified,
		PossibleContentFilter: c.PossibleContentFilter, OutputCapLimit: c.OutputCapLimit,
		Status: c.Status, Provider: c.Provider, Model: c.Model, UpstreamProvider: c.UpstreamProvider,
		ProviderMessage: c.ProviderMessage, Summary: c.Summary, Advice: c.Advice,
	}
	if !c.ResetAt.IsZero() {
		j.ResetAt = c.ResetAt.UTC().Format(time.RFC3339)
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes (ResetAt keeps second
// precision).
func (c *Classified) UnmarshalJSON(b []byte) error {
	var j classifiedJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*c = Classified{
		Class: j.Class, Retryable: j.Retryable, RotateCredential: j.RotateCredential,
		Fallback: j.Fallback, Compress: j.Compress, RetryAfter: time.Duration(j.RetryAfterMS) * time.Millisecond,
		Certain: j.Certain, BillingUnverified: j.BillingUnverified,
		PossibleContentFilter: j.PossibleContentFilter, OutputCapLimit: j.OutputCapLimit,
		Status: j.Status, Provider: j.Provider, Model: j.Model, UpstreamProvider: j.UpstreamProvider,
		ProviderMessage: j.ProviderMessage, Summary: j.Summary, Advice: j.Advice,
	}
	if j.ResetAt != "" {
		t, err := time.Parse(time.RFC3339, j.ResetAt)
		if err != nil {
			return err
		}
		c.ResetAt = t
	}
	return nil
}
