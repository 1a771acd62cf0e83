package testenv

import (
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/turn"
)

// ContinueOK runs one more turn that must complete with a single request,
// and checks that request: accepted by fakellm's strict validation,
// well-formed by WireProblems, and free of scaffolding. It returns the
// request's messages. It resets the server's script and recordings first.
func (e *Env) ContinueOK(text string) []fakellm.Msg {
	t := e.T
	t.Helper()
	e.Srv.Reset()
	e.Srv.Script(fakellm.Text("Done: " + text))
	res := e.Run(text)
	if res.Exit != turn.ExitCompleted {
		t.Fatalf("turn %q: exit %s: %s", text, res.Exit, res.Explanation)
	}
	e.NoViolations()
	reqs := e.Srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("turn %q sent %d requests, want 1", text, len(reqs))
	}
	msgs := reqs[0].Messages
	for _, p := range append(WireProblems(msgs), ScaffoldLeft(msgs)...) {
		t.Errorf("turn %q: %s", text, p)
	}
	return msgs
}
