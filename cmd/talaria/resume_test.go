package main

import (
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// chat -r in line mode lists the sessions numbered, newest first, and
// continues the one whose number is typed; the model then reads its
// history. A number not on the list is asked again.
func TestChatResumeLineMode(t *testing.T) {
	e := newCLIEnv(t)
	e.srv.Script(fakellm.Text("alpha answer"), fakellm.Text("beta answer"), fakellm.Text("continued"))
	for _, p := range []string{"alpha topic", "beta topic"} {
		if out := e.runTurn("openai", nil, p); out.code != exitOK {
			t.Fatalf("run: %d %s", out.code, out.stderr)
		}
	}
	out := e.chat("openai", "9\n2\nand more\n", "-r")
	if out.code != exitOK {
		t.Fatalf("chat -r: exit %d\n%s", out.code, out.stderr)
	}
	b, a := strings.Index(out.stdout, "  1  beta topic"), strings.Index(out.stdout, "  2  alpha topic")
	if b < 0 || a < b {
		t.Fatalf("the list is not numbered newest first:\n%s", out.stdout)
	}
	if !strings.Contains(out.stdout, `"9" is not a number from the list`) {
		t.Errorf("an out-of-range number was not refused:\n%s", out.stdout)
	}
	reqs := e.srv.Requests()
	last := reqs[len(reqs)-1]
	if len(last.Messages) != 3 || last.Messages[0].Text != "alpha topic" || last.Messages[2].Text != "and more" {
		t.Errorf("the resumed turn did not carry alpha's history: %+v", last.Messages)
	}
	if out := e.chat("openai", "", "-r", "a", "b"); out.code != exitUsage {
		t.Errorf("-r with two ids: exit %d", out.code)
	}
}
