package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadGuardsFile writes body as config.yaml in a temp home and loads it
// with an empty environment.
func loadGuardsFile(t *testing.T, body string) (*Config, error) {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return Load(home, func(string) string { return "" })
}

func TestGuardsKeys(t *testing.T) {
	off, on := false, true
	zero, two := 0, 2
	tests := []struct {
		name string
		body string
		want Guards
	}{
		// An explicit zero is kept apart from an absent key: it means no
		// retries, where absent means the default.
		{name: "zero empty retries", body: "guards:\n  empty_retries: 0\n", want: Guards{EmptyRetries: &zero}},
		{name: "absent: every switch unset", body: "max_iterations: 10\n", want: Guards{}},
		{
			name: "each switch off",
			body: "guards:\n  identical_calls: false\n  said_but_stopped: false\n  empty_response: false\n",
			want: Guards{IdenticalCalls: &off, SaidButStopped: &off, EmptyResponse: &off},
		},
		{
			name: "one switch off, one on, limits set",
			body: "guards:\n  identical_calls: true\n  empty_response: false\n  tool_loop_stop: 5\n  empty_retries: 2\n  empty_cost_threshold_usd: 0.5\n",
			want: Guards{IdenticalCalls: &on, EmptyResponse: &off, ToolLoopStop: 5, EmptyRetries: &two, EmptyCostThresholdUSD: 0.5},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := loadGuardsFile(t, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			g := c.Guards
			for _, b := range []struct {
				key       string
				got, want *bool
			}{
				{"identical_calls", g.IdenticalCalls, tc.want.IdenticalCalls},
				{"said_but_stopped", g.SaidButStopped, tc.want.SaidButStopped},
				{"empty_response", g.EmptyResponse, tc.want.EmptyResponse},
			} {
				if (b.got == nil) != (b.want == nil) || (b.got != nil && *b.got != *b.want) {
					t.Errorf("%s = %s, want %s", b.key, showBool(b.got), showBool(b.want))
				}
			}
			if g.ToolLoopStop != tc.want.ToolLoopStop || intOr(g.EmptyRetries, -1) != intOr(tc.want.EmptyRetries, -1) || g.EmptyCostThresholdUSD != tc.want.EmptyCostThresholdUSD {
				t.Errorf("limits = %d, %d, %g; want %d, %d, %g", g.ToolLoopStop, intOr(g.EmptyRetries, -1), g.EmptyCostThresholdUSD,
					tc.want.ToolLoopStop, intOr(tc.want.EmptyRetries, -1), tc.want.EmptyCostThresholdUSD)
			}
		})
	}
}

func showBool(p *bool) string {
	if p == nil {
		return "unset"
	}
	if *p {
		return "true"
	}
	return "false"
}

func TestGuardsKeysRejected(t *testing.T) {
	tests := []struct {
		name, body, wantIn string
	}{
		{"misspelled switch", "guards:\n  identical_call: false\n", "identical_call"},
		{"not a boolean", "guards:\n  empty_response: maybe\n", "maybe"},
		{"negative loop stop", "guards:\n  tool_loop_stop: -1\n", "guards.tool_loop_stop"},
		{"negative retries", "guards:\n  empty_retries: -2\n", "guards.empty_retries"},
		{"negative threshold", "guards:\n  empty_cost_threshold_usd: -0.1\n", "guards.empty_cost_threshold_usd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadGuardsFile(t, tc.body)
			if err == nil || !strings.Contains(err.Error(), tc.wantIn) {
				t.Fatalf("error %v; want one naming %q", err, tc.wantIn)
			}
		})
	}
}
