package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// Memory added with `talaria memory add` between two runs of one session
// rebuilds its system prompt once: `run` says so in one progress line,
// `trace` shows it in the turn's timeline, and the run after that says
// nothing and sends the same prompt.
func TestRunSaysPromptRebuilt(t *testing.T) {
	e := newCLIEnv(t)
	const line = "· capabilities changed (memory changed): system prompt rebuilt once\n"
	e.srv.SetDefault(func(fakellm.Request) fakellm.Step { return fakellm.Text("ok") })
	out := e.runTurn("openai", []string{"--json"}, "hi")
	if out.code != exitOK {
		t.Fatalf("run: %d %s", out.code, out.stderr)
	}
	var res struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if out := e.run("", "memory", "add", "--workspace", e.ws, "Deploys go through staging"); out.code != exitOK {
		t.Fatalf("memory add: %d %s", out.code, out.stderr)
	}
	second := e.runTurn("openai", []string{"--continue"}, "again")
	third := e.runTurn("openai", []string{"--continue"}, "once more")
	if second.code != exitOK || third.code != exitOK {
		t.Fatalf("continued runs: %d %d\n%s\n%s", second.code, third.code, second.stderr, third.stderr)
	}
	if n := strings.Count(second.stderr, line); n != 1 {
		t.Errorf("second run shows %q %d times, want once:\n%s", line, n, second.stderr)
	}
	if strings.Contains(third.stderr, "rebuilt") {
		t.Errorf("a run with nothing changed says the prompt was rebuilt:\n%s", third.stderr)
	}
	reqs := e.srv.Requests()
	if len(reqs) != 3 || strings.Contains(reqs[0].System, "staging") ||
		!strings.Contains(reqs[1].System, "Deploys go through staging") || reqs[1].System != reqs[2].System {
		t.Fatalf("system prompts across the runs are wrong (%d requests)", len(reqs))
	}
	tr := e.run("", "trace", res.SessionID, "--turn", "2")
	if tr.code != exitOK {
		t.Fatalf("trace: %d %s", tr.code, tr.stderr)
	}
	if n := strings.Count(tr.stdout, "capabilities changed (memory changed): system prompt rebuilt once"); n != 1 {
		t.Errorf("trace shows the rebuild %d times, want once:\n%s", n, tr.stdout)
	}
}
