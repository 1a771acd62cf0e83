package main

import (
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// `echo data | talaria run "summarize this"`: piped stdin goes with the
// prompt; more than the limit is refused with the limit said; empty stdin
// leaves the prompt as it is.
func TestRunAttachesPipedStdin(t *testing.T) {
	t.Run("attached", func(t *testing.T) {
		e := newCLIEnv(t)
		e.srv.Script(fakellm.Text("summary"))
		args := append(append([]string{"run"}, e.routeArgs("openai")...), "summarize this")
		out := e.run("line one of the piped data\nline two\n", args...)
		if out.code != exitOK {
			t.Fatalf("exit %d\n%s", out.code, out.stderr)
		}
		reqs := e.srv.Requests()
		if len(reqs) != 1 {
			t.Fatalf("%d requests", len(reqs))
		}
		user := reqs[0].Messages[len(reqs[0].Messages)-1].Text
		if !strings.HasPrefix(user, "summarize this") || !strings.Contains(user, "line one of the piped data\nline two") {
			t.Errorf("the model was sent %q", user)
		}
	})
	t.Run("over the limit", func(t *testing.T) {
		e := newCLIEnv(t)
		args := append(append([]string{"run"}, e.routeArgs("openai")...), "summarize this")
		out := e.run(strings.Repeat("x", maxStdinAttach+1), args...)
		if out.code != exitUsage || !strings.Contains(out.stderr, "more than 256 KiB") {
			t.Errorf("exit %d\n%s", out.code, out.stderr)
		}
		if n := len(e.srv.Requests()); n != 0 {
			t.Errorf("%d model requests for a refused prompt", n)
		}
	})
	t.Run("empty stdin", func(t *testing.T) {
		e := newCLIEnv(t)
		e.srv.Script(fakellm.Text("hi"))
		out := e.runTurn("openai", nil, "just this")
		if out.code != exitOK {
			t.Fatalf("exit %d\n%s", out.code, out.stderr)
		}
		if got := e.srv.Requests()[0].Messages[0].Text; got != "just this" {
			t.Errorf("prompt %q", got)
		}
	})
}
