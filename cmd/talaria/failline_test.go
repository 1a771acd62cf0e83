package main

import (
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/internal/config"
	"github.com/talaria-agent/talaria/turn"
)

// The CLI's own advice (its commands, flags and config keys) is added here
// from the typed outcome and class; the engine's explanation names none of
// them, so the line is the explanation plus exactly this hint.
func TestFailureLineAddsCLIHint(t *testing.T) {
	a := &app{cfg: &config.Config{File: "/home/u/.talaria/config.yaml", Providers: map[string]config.Provider{"local": {}}}}
	failed := func(x turn.Exit, c failover.Class) *turn.Result {
		r := &turn.Result{Explanation: "Why."}
		r.Fail(x, &turn.Failure{Class: c, Provider: "local"})
		return r
	}
	tests := []struct {
		name string
		res  *turn.Result
		hint string // "" = the explanation alone
	}{
		{"session", failed(turn.ExitSessionFailed, ""), "`talaria sessions list`"},
		{"credentials", failed(turn.ExitCredentialsFailed, ""), "`talaria keys status`"},
		{"compression failed", failed(turn.ExitCompressionFailed, ""), "compression.on_failure: placeholder"},
		{"compression exhausted", failed(turn.ExitCompressionExhausted, failover.ClassContextOverflow), "/compact"},
		{"endpoint not found", failed(turn.ExitFailed, failover.ClassEndpointNotFound), "--base-url, or providers.local.base_url in /home/u/.talaria/config.yaml"},
		{"unknown", failed(turn.ExitFailed, failover.ClassUnknown), "`talaria explain-error`"},
		{"rate limit", failed(turn.ExitFailed, failover.ClassRateLimit), ""},
		{"completed", &turn.Result{Exit: turn.ExitCompleted, Explanation: "Why."}, ""},
	}
	c := &cli{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := c.failureLine(a, tt.res)
			if !strings.HasPrefix(line, "Why.") || !strings.Contains(line, tt.hint) || (tt.hint == "" && line != "Why.") {
				t.Errorf("line %q; want the explanation and %q", line, tt.hint)
			}
		})
	}
}
