package main

import (
	"strings"
	"testing"
)

// `talaria demo --delegate` shows a delegation in both wire formats: two
// subagents run as child sessions, their reports reach the parent, which
// writes the file from them; the tree and the rolled-up spend are shown.
func TestDemoDelegate(t *testing.T) {
	for _, api := range []string{"openai", "anthropic"} {
		t.Run(api, func(t *testing.T) {
			e := newCLIEnv(t)
			out := e.run("", "demo", "--delegate", "--api", api, "--latency", "0s")
			if out.code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", out.code, out.stdout, out.stderr)
			}
			for _, s := range []string{
				"⇢ subagent", "⇠ subagent", "✓ delegate: [subagent",
				"  - nuts: 3", "  - hinges: 2", "  - screws: 0",
				"incl. subagents (2 sessions): 7 API calls",
				"children:", "└ subagent",
				"strict validation problems: 0",
				"completed · 3 API calls · 2 tool rounds", "incl. 2 subagents: 7 API calls",
			} {
				if !strings.Contains(out.stdout, s) {
					t.Errorf("demo output lacks %q", s)
				}
			}
			if n := strings.Count(out.stdout, "[completed] 2 API calls"); n != 2 {
				t.Errorf("tree shows %d completed children, want 2", n)
			}
			if t.Failed() {
				t.Logf("stdout:\n%s", out.stdout)
			}
		})
	}
}
