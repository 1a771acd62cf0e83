package failover

import (
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
)

func TestExplainBillingAmbiguity(t *testing.T) {
	tests := []struct {
		name    string
		in      Input
		want    []string
		notWant []string
	}{
		{
			name: "ambiguous billing says both",
			in:   Input{Provider: "anthropic", Status: 400, Body: []byte(anthExtraUsage)},
			want: []string{"unverified", "may also be a content filter", "out of extra usage",
				"two minutes", "if your usage page still shows quota"},
			notWant: []string{"out of credit"},
		},
		{
			name:    "certain billing is assertive",
			in:      Input{Provider: "anthropic", Status: 400, Body: []byte(anthCredit)},
			want:    []string{"out of credit", "add credit", "an hour"},
			notWant: []string{"content filter", "unverified", "Certainty:"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := Explain(Classify(tt.in))
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("Explain lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out, w) {
					t.Errorf("Explain must not say %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestExplainShape(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want []string
	}{
		{"rate limit: retry helps, names the wait",
			Input{Provider: "openai", Status: 429, Body: []byte(openAIRateLimit), Now: testNow()},
			[]string{"What happened: rate limited by openai (429).", "Retrying: can help; the provider asks to wait 1.574s.", "Talaria: waits", "You can:"}},
		{"upstream blame is explicit",
			Input{Provider: "openrouter", Status: 429, Body: []byte(orUpstreamText)},
			[]string{"Where: the error came from BaseTen, relayed by openrouter.", "without switching keys"}},
		{"overflow guess says it is a guess",
			Input{Provider: "openai", Status: 400, Messages: 300},
			[]string{"Certainty: best guess", "compresses the conversation"}},
		{"output cap says clamp and no fallback",
			Input{Provider: "openai", Model: "gpt-4o", Status: 400, Body: []byte(openAIMaxTokens)},
			[]string{"limit of 16384", "lower max_tokens", "never falls back"}},
		{"ssl says it stopped",
			Input{Provider: "local", Transport: llm.TransportTLSCert},
			[]string{"could not be verified", "stops", "certificate"}},
		{"cancel does not blame the provider",
			Input{Provider: "openai", Transport: llm.TransportCanceled},
			[]string{"canceled by the caller", "the provider did nothing wrong"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := Explain(Classify(tt.in))
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("Explain lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "\x1b[") {
				t.Error("Explain must be plain text without colour codes")
			}
			if n := strings.Count(out, "\n"); n < 3 {
				t.Errorf("Explain has %d lines, want a multi-line explanation", n)
			}
		})
	}
}

func TestExplainEveryClassSaysWhatTalariaDoes(t *testing.T) {
	for _, c := range Classes() {
		t.Run(string(c), func(t *testing.T) {
			cl := classified(c)
			cl.Provider, cl.Status = "p", 400
			cl.Summary, cl.Advice = summary(cl), advice(cl)
			out := Explain(cl)
			for _, label := range []string{"What happened: ", "Retrying: ", "Talaria: ", "You can: "} {
				if !strings.Contains(out, label) {
					t.Errorf("Explain(%s) lacks %q:\n%s", c, label, out)
				}
			}
		})
	}
}

func TestAdviceMentionsResetTime(t *testing.T) {
	c := Classified{Class: ClassRateLimit, Provider: "openai", ResetAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)}
	if a := advice(c); !strings.Contains(a, "03:04:05") {
		t.Errorf("advice %q should name the reset time", a)
	}
}
