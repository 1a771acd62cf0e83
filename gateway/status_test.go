package gateway

import "testing"

func TestStatusKind(t *testing.T) {
	for _, c := range []struct{ line, kind string }{
		{"retrying in 2s: rate limited by openai (429) (retry 1 of 3)", "retry"},
		{"falling back from openai/gpt-4.1 to claude/claude-sonnet-4-5: openai overloaded (503)", "fallback"},
		{"switching to another openai key: openai rejected the credential (401)", "rotation"},
		{"context is ~9000 tokens, over the 8000-token threshold of m: compressing", "compression"},
		{"prompt is too long: compressing and retrying", "compression"},
		{"compression made no progress; not trying again this turn", "compression"},
		{"the model announced an action but stopped; nudging it to continue", "guard"},
		{"primary returned an empty answer; retrying (1 so far)", "guard"},
		{"iteration budget spent: asking the model to sum up without tools", "guard"},
		{"the answer hit the output limit; continuing (1 of 4)", "continuation"},
		{"the answer stopped mid-sentence; asking the model to continue it", "continuation"},
		{"session a was continued as b; using that", "other"},
	} {
		if got := statusKind(c.line); got != c.kind {
			t.Errorf("statusKind(%q) = %s, want %s", c.line, got, c.kind)
		}
	}
}
