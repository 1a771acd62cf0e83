package observe

import (
	"strings"
	"testing"
)

// Real-looking secrets of each kind (made up, but in the providers' shapes).
const (
	openaiKey    = "sk-proj-Xk3vQ9mZr7Lp2Ws8Nb4Tc6Yd1Fg5Hj0KaUe2Ri9OoPl3Mn7Bv"
	anthropicKey = "sk-ant-api03-q8Jf2kLm9Np4Rs7Tv1Wx3Yz6Ab5Cd0Ef8Gh2Ij4Kl6Mn9Op1Qr3St5Uv7Wx-AbCdEfAA"
	googleKey    = "AIzaSyD3f8Kq2Lm9Np4Rs7Tv1Wx3Yz6Ab5Cd0Ef"
	githubToken  = "ghp_7Fq2Lm9Np4Rs7Tv1Wx3Yz6Ab5Cd0Ef8Gh2Ij"
	awsKey       = "AKIAIOSFODNN7EXAMPLF"
	slackToken   = "xoxb-2048-4096-Fq2Lm9Np4Rs7Tv1Wx3Yz"
	jwt          = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	privateKey   = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDq8x3Fq2Lm9Np4Rs7Tv1Wx3Yz6Ab5Cd0Ef8Gh2Ij4KlAAAAJg=\n-----END OPENSSH PRIVATE KEY-----"
	// ownKey is a key Talaria holds that matches no provider shape.
	ownKey = "local-gw-7c1e9b2f4d6a8e0c"
)

func TestRedaction(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		secret string // must not survive redaction
		keep   string // context that must survive
	}{
		{"openai key", "use " + openaiKey + " for the call", openaiKey, "for the call"},
		{"anthropic key", "ANTHROPIC=" + anthropicKey, anthropicKey, "ANTHROPIC="},
		{"google key", "url: https://maps.example.com/x?key=" + googleKey + "&q=1", googleKey, "&q=1"},
		{"github token", "git clone https://x:" + githubToken + "@github.com/o/r", githubToken, "github.com/o/r"},
		{"aws key", "aws_access_key_id " + awsKey, awsKey, "aws_access_key_id"},
		{"slack token", "token " + slackToken, slackToken, "token"},
		{"bearer header", "curl -H 'Authorization: Bearer abcDEF123456ghiJKL789' https://api", "abcDEF123456ghiJKL789", "https://api"},
		{"jwt", "cookie: session=" + jwt, jwt, "cookie"},
		{"private key", "here:\n" + privateKey + "\ndone", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", "done"},
		{"private key cut short", "here:\n" + privateKey[:120], "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", "here:"},
		{"password in url", "DATABASE_URL_RO is postgres://app:S3cr3t-Pa55@db.internal:5432/prod", "S3cr3t-Pa55", "db.internal:5432/prod"},
		{"env assignment", "cat .env\nDB_PASSWORD=hunter2-but-longer\nSTRIPE_SECRET_KEY=\"abc def\"\nPORT=8080", "hunter2-but-longer", "PORT=8080"},
		{"env quoted", "export API_TOKEN='tok with spaces'", "tok with spaces", "export API_TOKEN="},
		{"json secret", `{"api_key": "plain-looking-value", "model": "gpt-4.1"}`, "plain-looking-value", `"model": "gpt-4.1"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := RedactSecrets(c.in)
			if strings.Contains(got, c.secret) {
				t.Fatalf("secret survived: %q", got)
			}
			if !strings.Contains(got, c.keep) {
				t.Fatalf("context %q lost: %q", c.keep, got)
			}
			if !strings.Contains(got, "REDACTED") {
				t.Fatalf("no redaction marker: %q", got)
			}
		})
	}
	// Ordinary text is left alone.
	for _, s := range []string{"the sky is blue", "func main() { fmt.Println(x) }", "see https://example.com/a:b", "password policy: 8 chars"} {
		if got := RedactSecrets(s); got != s {
			t.Errorf("RedactSecrets(%q) = %q, want unchanged", s, got)
		}
	}
}

// The three modes side by side: metadata records nothing, redacted
// replaces secrets before truncating, full keeps content but never
// Talaria's own keys.
func TestCaptureModes(t *testing.T) {
	// The secret straddles the truncation limit: truncating first would
	// leave a prefix no rule recognises.
	text := strings.Repeat("x", 40) + " " + openaiKey + " and " + ownKey + " tail"
	cases := []struct {
		mode     Capture
		ok       bool
		contains []string
		absent   []string
	}{
		{CaptureMetadata, false, nil, []string{"x"}},
		{CaptureRedacted, true, []string{Redacted, "truncated"}, []string{"sk-proj", ownKey}},
		{CaptureFull, true, []string{openaiKey, " tail"}, []string{ownKey}},
	}
	for _, c := range cases {
		t.Run(string(c.mode), func(t *testing.T) {
			s := NewScrubber(c.mode, 60, []string{ownKey, "short"})
			got, ok := s.Content(text)
			if ok != c.ok {
				t.Fatalf("ok = %v, want %v", ok, c.ok)
			}
			for _, w := range c.contains {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in %q", w, got)
				}
			}
			for _, w := range c.absent {
				if w != "" && strings.Contains(got, w) {
					t.Errorf("%q must not be in %q", w, got)
				}
			}
			if s.Own("err: key "+ownKey) != "err: key "+Redacted {
				t.Errorf("own key not scrubbed from metadata text in mode %s", c.mode)
			}
		})
	}
	if _, err := ParseCapture("everything"); err == nil {
		t.Fatal("unknown capture mode accepted")
	}
	if c, _ := ParseCapture(""); c != CaptureRedacted {
		t.Fatalf("default capture = %q, want redacted", c)
	}
}
