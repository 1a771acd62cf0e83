package main

import (
	"context"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
)

// The model's reasoning is shown as it streams: on stderr in run (never in
// the answer on stdout), dimmed when stderr is a colour terminal, after a
// plain "thinking:" prefix otherwise (NO_COLOR, a pipe).
func TestRunShowsReasoning(t *testing.T) {
	cases := []struct {
		name    string
		tty     bool
		noColor bool
		dim     bool
	}{
		{"pipe", false, false, false},
		{"terminal", true, false, true},
		{"terminal NO_COLOR", true, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newCLIEnv(t)
			if tc.noColor {
				e.env["NO_COLOR"] = "1"
			}
			step := fakellm.Text("The answer is 42.")
			step.Reasoning = "First I weigh the options."
			e.srv.Script(step)
			var stdout, stderr testenv.Buffer
			args := append(append([]string{"run"}, e.routeArgs("openai")...), "think")
			code := newCLI(strings.NewReader(""), &stdout, &stderr, e.getenv, false, tc.tty).dispatch(context.Background(), args)
			if code != exitOK {
				t.Fatalf("exit %d\n%s", code, stderr.String())
			}
			if strings.Contains(stdout.String(), "weigh") || strings.TrimSpace(stdout.String()) != "The answer is 42." {
				t.Errorf("stdout holds more than the answer: %q", stdout.String())
			}
			errOut := stderr.String()
			if !strings.Contains(errOut, "thinking: First I weigh the options.") {
				t.Errorf("stderr does not show the reasoning:\n%q", errOut)
			}
			if dim := strings.Contains(errOut, "\x1b[2mthinking: First I weigh the options.\x1b[0m\n"); dim != tc.dim {
				t.Errorf("dimmed = %v, want %v:\n%q", dim, tc.dim, errOut)
			}
			if !tc.dim && strings.Contains(errOut, "\x1b[") {
				t.Errorf("escape sequences without a colour terminal:\n%q", errOut)
			}
		})
	}
}
