package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// `talaria run` shows the model's plan as one progress line each time it
// changes (not for a call that changed nothing), and `talaria trace` shows
// the same changes in the turn's timeline.
func TestRunShowsTodoProgressAndTrace(t *testing.T) {
	for _, api := range []string{"openai", "anthropic"} {
		t.Run(api, func(t *testing.T) {
			e := newCLIEnv(t)
			set := `{"action":"set","items":[{"id":"parse","text":"write the parser","status":"in_progress"},{"id":"test","text":"test it"}]}`
			next := `{"action":"update","items":[{"id":"parse","status":"done"},{"id":"test","status":"in_progress"}]}`
			e.srv.Script(
				fakellm.Calls(fakellm.ToolCall("todo", set)),
				fakellm.Calls(fakellm.ToolCall("todo", next)),
				fakellm.Calls(fakellm.ToolCall("todo", next)), // no change: no line
				fakellm.Text("Parser written and tested."),
			)
			out := e.runTurn(api, []string{"--json"}, "write a parser")
			if out.code != exitOK {
				t.Fatalf("exit %d\n%s", out.code, out.stderr)
			}
			for _, want := range []string{"· plan 0/2 done · now: write the parser\n", "· plan 1/2 done · now: test it\n"} {
				if n := strings.Count(out.stderr, want); n != 1 {
					t.Errorf("stderr has %q %d times, want once:\n%s", want, n, out.stderr)
				}
			}
			var res struct {
				SessionID string `json:"session_id"`
			}
			if err := json.Unmarshal([]byte(out.stdout), &res); err != nil {
				t.Fatal(err)
			}
			tr := e.run("", "trace", res.SessionID)
			if tr.code != exitOK {
				t.Fatalf("trace: %d %s", tr.code, tr.stderr)
			}
			if !strings.Contains(tr.stdout, "plan 0/2 done · now: write the parser") || !strings.Contains(tr.stdout, "plan 1/2 done · now: test it") {
				t.Errorf("trace lacks the plan changes:\n%s", tr.stdout)
			}
		})
	}
}
