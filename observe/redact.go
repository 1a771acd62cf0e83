package observe

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/talaria-agent/talaria/internal/setting"
	"github.com/talaria-agent/talaria/internal/textcut"
)

// Capture says how much message and tool content goes into telemetry.
type Capture string

const (
	// CaptureMetadata records no content: names, sizes, tokens, timings,
	// costs and error classes only.
	CaptureMetadata Capture = "metadata"
	// CaptureRedacted (the default) records content with secrets replaced,
	// then truncated to a limit.
	CaptureRedacted Capture = "redacted"
	// CaptureFull records content as it is, but for the API keys Talaria
	// itself holds, which no mode ever records.
	CaptureFull Capture = "full"
)

// ParseCapture reads a capture mode; "" is the default, redacted.
func ParseCapture(s string) (Capture, error) {
	switch c := Capture(strings.ToLower(strings.TrimSpace(s))); c {
	case "":
		return CaptureRedacted, nil
	case CaptureMetadata, CaptureRedacted, CaptureFull:
		return c, nil
	}
	return "", fmt.Errorf("telemetry capture %q: want metadata, redacted or full", s)
}

// DefaultMaxContent bounds one captured content attribute in redacted mode.
const DefaultMaxContent = 4096

// Redacted replaces a removed secret.
const Redacted = "[REDACTED]"

// secretRule is one kind of secret and how its match is rewritten (a
// regexp replacement template keeps surrounding context, such as a
// variable name or a URL's user, readable).
type secretRule struct {
	name string
	re   *regexp.Regexp
	repl string
}

// rules are applied in order: whole blocks (private keys) first, then
// structures whose context is kept (URLs, assignments, headers), then bare
// tokens recognisable by their shape. They are compiled on first use, once:
// most processes never redact anything.
var rules = sync.OnceValue(func() []secretRule {
	return []secretRule{
		{"private_key", regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----(?s:.*?)(-----END[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z)`), "[REDACTED PRIVATE KEY]"},
		{"url_password", regexp.MustCompile(`\b([a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]*):[^/\s@]+@`), "${1}:" + Redacted + "@"},
		{"env_assignment", regexp.MustCompile(`(?m)^(\s*(?:export\s+)?[A-Za-z0-9_.]*(?i:key|secret|token|passw(?:or)?d|pwd|credentials?|auth)[A-Za-z0-9_.]*\s*[=:]\s*)(?:"[^"\n]*"|'[^'\n]*'|[^\s#]+)`), "${1}" + Redacted},
		{"json_secret", regexp.MustCompile(`(?i)("[a-z0-9_.-]*(?:api[_-]?key|secret|token|passw(?:or)?d|credentials?)"\s*:\s*)"[^"]+"`), `${1}"` + Redacted + `"`},
		{"auth_header", regexp.MustCompile(`(?i)\b(authorization\s*[:=]\s*(?:bearer|basic|token)\s+|bearer\s+|x-api-key\s*[:=]\s*|api[_-]?key\s*[:=]\s*)[A-Za-z0-9._~+/=-]{8,}`), "${1}" + Redacted},
		{"anthropic_key", regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{20,}`), Redacted},
		{"openai_key", regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_-]{20,}`), Redacted},
		{"google_key", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`), Redacted},
		{"github_token", regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})`), Redacted},
		{"aws_access_key", regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), Redacted},
		{"slack_token", regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`), Redacted},
		{"stripe_key", regexp.MustCompile(`\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}`), Redacted},
		{"huggingface_token", regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}`), Redacted},
		{"groq_key", regexp.MustCompile(`\bgsk_[A-Za-z0-9]{40,}`), Redacted},
		{"xai_key", regexp.MustCompile(`\bxai-[A-Za-z0-9]{40,}`), Redacted},
		{"jwt", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), Redacted},
	}
})

// Scrubber prepares content for telemetry according to a capture mode.
// It is immutable and safe for concurrent use.
type Scrubber struct {
	mode Capture
	max  int
	// own are the API keys Talaria holds: replaced in every mode, even
	// where they would not match any rule (a custom provider's key).
	own *strings.Replacer
}

// NewScrubber builds a Scrubber. ownKeys are the keys Talaria itself holds
// (keys shorter than 8 bytes are ignored: replacing them would mangle
// ordinary text, and no provider issues such keys). max bounds content in
// redacted mode (0: DefaultMaxContent).
func NewScrubber(mode Capture, max int, ownKeys []string) *Scrubber {
	max = setting.Or(max, DefaultMaxContent)
	var pairs []string
	for _, k := range ownKeys {
		if k = strings.TrimSpace(k); len(k) >= 8 {
			pairs = append(pairs, k, Redacted)
		}
	}
	s := &Scrubber{mode: mode, max: max}
	if len(pairs) > 0 {
		s.own = strings.NewReplacer(pairs...)
	}
	return s
}

// Mode is the capture mode.
func (s *Scrubber) Mode() Capture { return s.mode }

// Content prepares message or tool content: ok is false in metadata mode
// (record nothing). In redacted mode secrets are replaced before the text
// is truncated, so a cut can never leave half a secret unrecognised.
func (s *Scrubber) Content(text string) (out string, ok bool) {
	switch s.mode {
	case CaptureMetadata:
		return "", false
	case CaptureFull:
		return s.Own(text), true
	}
	return truncate(RedactSecrets(s.Own(text)), s.max), true
}

// Own replaces the keys Talaria holds; it applies to everything recorded in
// any mode (error messages echo keys too).
func (s *Scrubber) Own(text string) string {
	if s.own == nil {
		return text
	}
	return s.own.Replace(text)
}

// RedactSecrets replaces every recognised secret in text.
func RedactSecrets(text string) string {
	for _, r := range rules() {
		text = r.re.ReplaceAllString(text, r.repl)
	}
	return text
}

// truncate cuts text to at most max bytes at a rune boundary, saying how
// much was cut.
func truncate(text string, max int) string {
	if len(text) <= max {
		return text
	}
	cut := len(textcut.Prefix(text, max))
	return text[:cut] + fmt.Sprintf("…[truncated %d bytes]", len(text)-cut)
}
