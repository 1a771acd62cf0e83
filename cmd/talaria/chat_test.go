package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
)

func (e *cliEnv) chat(api, stdin string, extra ...string) cliOut {
	e.t.Helper()
	args := append([]string{"chat"}, e.routeArgs(api)...)
	return e.run(stdin, append(args, extra...)...)
}

// A chat driven through a pipe: turns stream, tools that change things ask
// and y / n / a (always, for that tool in this chat) do what they say.
func TestChatApprovals(t *testing.T) {
	for _, api := range []string{"openai", "anthropic"} {
		t.Run(api, func(t *testing.T) {
			e := newCLIEnv(t)
			e.srv.Script(
				// turn 1: approved with y
				fakellm.Calls(fakellm.ToolCall("write_file", `{"path":"yes.txt","content":"y"}`)),
				fakellm.Text("Wrote yes.txt."),
				// turn 2: declined with n
				fakellm.Calls(fakellm.ToolCall("write_file", `{"path":"no.txt","content":"n"}`)),
				fakellm.Text("I did not write no.txt."),
				// turn 3: shell approved for good with a
				fakellm.Calls(fakellm.ToolCall("shell", `{"command":"echo one > one.txt"}`)),
				fakellm.Text("Ran the first command."),
				// turn 4: shell again, not asked
				fakellm.Calls(fakellm.ToolCall("shell", `{"command":"echo two > two.txt"}`)),
				fakellm.Text("Ran the second command."),
			)
			stdin := "write yes\ny\nwrite no\nn\nrun one\na\nrun two\n/exit\n"
			out := e.chat(api, stdin)
			if out.code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", out.code, out.stdout, out.stderr)
			}
			for _, f := range []struct {
				name string
				want bool
			}{{"yes.txt", true}, {"no.txt", false}, {"one.txt", true}, {"two.txt", true}} {
				_, err := os.Stat(filepath.Join(e.ws, f.name))
				if (err == nil) != f.want {
					t.Errorf("%s exists = %v, want %v", f.name, err == nil, f.want)
				}
			}
			if n := strings.Count(out.stdout, "Allow write_file"); n != 2 {
				t.Errorf("asked %d times about write_file, want 2:\n%s", n, out.stdout)
			}
			if n := strings.Count(out.stdout, "Allow shell"); n != 1 {
				t.Errorf("asked %d times about shell, want 1 (then always):\n%s", n, out.stdout)
			}
			// The answers are streamed to stdout (the chat prints them only
			// through the text hook).
			for _, want := range []string{"Wrote yes.txt.", "I did not write no.txt.", "Ran the first command.", "Ran the second command."} {
				if !strings.Contains(out.stdout, want) {
					t.Errorf("stdout lacks the streamed %q", want)
				}
			}
			reqs := e.srv.Requests()
			if len(reqs) != 8 {
				t.Fatalf("%d requests, want 8", len(reqs))
			}
			if res := lastToolResult(reqs[3]); !strings.Contains(res, "declined") {
				t.Errorf("declined call's result = %q", res)
			}
			if strings.Count(out.stderr, "completed") != 4 {
				t.Errorf("want four turn summaries on stderr:\n%s", out.stderr)
			}
			e.noViolations()
		})
	}
}

// lastToolResult is the newest tool result text of a request.
func lastToolResult(req fakellm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "tool" {
			return req.Messages[i].Text
		}
	}
	return ""
}

var sessionIDRe = regexp.MustCompile(`\b\d{8}-\d{6}-[0-9a-f]+\b`)

// Slash commands: /session names the session, /usage reports its calls,
// /new starts another (the next turn carries no history), /help lists the
// commands; EOF ends the chat like /exit.
func TestChatSlashCommands(t *testing.T) {
	e := newCLIEnv(t)
	e.srv.Script(fakellm.Text("first reply").WithUsage(120, 7), fakellm.Text("fresh reply"))
	stdin := "hello\n/session\n/usage\n/new\n/session\nagain\n/session\n/help\n/bogus\n" // then EOF
	out := e.chat("openai", stdin)
	if out.code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", out.code, out.stdout, out.stderr)
	}
	ids := sessionIDRe.FindAllString(out.stdout, -1)
	// created with "hello", /session, /usage; /new creates nothing until
	// "again" creates the next, then /session
	if len(ids) != 5 || ids[0] != ids[1] || ids[1] != ids[2] || ids[3] != ids[4] || ids[0] == ids[3] {
		t.Fatalf("session ids in output = %v\n%s", ids, out.stdout)
	}
	if !strings.Contains(out.stdout, "1 API calls") || !strings.Contains(out.stdout, "120 input") || !strings.Contains(out.stdout, "7 output") {
		t.Errorf("/usage output missing:\n%s", out.stdout)
	}
	if !strings.Contains(out.stdout, "(session "+ids[3]+")") || !strings.Contains(out.stdout, "no session yet") {
		t.Errorf("the session made by the first message after /new was not announced:\n%s", out.stdout)
	}
	if !strings.Contains(out.stdout, "/compact") || !strings.Contains(out.stdout, "unknown command /bogus") {
		t.Errorf("/help or unknown command output missing:\n%s", out.stdout)
	}
	reqs := e.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if len(reqs[1].Messages) != 1 || reqs[1].Messages[0].Text != "again" {
		t.Errorf("turn after /new carried history: %+v", reqs[1].Messages)
	}
}

// /exit and EOF both end the chat with exit 0 without another request;
// -c continues the most recent session.
func TestChatExitAndContinue(t *testing.T) {
	e := newCLIEnv(t)
	e.srv.Script(fakellm.Text("noted: kestrel"), fakellm.Text("it was kestrel"))
	out := e.chat("openai", "remember kestrel\n/exit\nthis line is never read\n")
	if out.code != exitOK || len(e.srv.Requests()) != 1 {
		t.Fatalf("/exit: exit %d, %d requests\n%s", out.code, len(e.srv.Requests()), out.stderr)
	}
	first := sessionIDRe.FindString(out.stdout)

	out = e.chat("openai", "what was the word?", "-c") // no newline, then EOF
	if out.code != exitOK {
		t.Fatalf("EOF: exit %d\n%s", out.code, out.stderr)
	}
	if got := sessionIDRe.FindString(out.stdout); got != first {
		t.Errorf("-c chat is in session %q, want %q", got, first)
	}
	reqs := e.srv.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "kestrel") {
		t.Errorf("continued chat did not carry the earlier turn")
	}
	if !strings.Contains(out.stdout, "it was kestrel") {
		t.Errorf("answer not streamed:\n%s", out.stdout)
	}
}

// Opening and leaving chat creates no session, and -c continues the most
// recent session that has messages, not an empty one.
func TestChatOpenedAndLeftCreatesNoSession(t *testing.T) {
	e := newCLIEnv(t)
	e.srv.Script(fakellm.Text("noted: heron"), fakellm.Text("it was heron"))
	if out := e.runTurn("openai", nil, "remember heron"); out.code != exitOK {
		t.Fatalf("run: %d %s", out.code, out.stderr)
	}
	if out := e.chat("openai", "/exit\n"); out.code != exitOK {
		t.Fatalf("chat: %d %s", out.code, out.stderr)
	}
	if out := e.run("", "sessions", "list", "--json"); strings.Count(out.stdout, `"id"`) != 1 {
		t.Errorf("opening chat created a session:\n%s", out.stdout)
	}
	// An empty session made some other way is skipped by -c too.
	a, err := e.appForTest()
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.agent.NewSession(context.Background(), agent.SessionOptions{})
	a.Close()
	if err != nil {
		t.Fatal(err)
	}
	out := e.runTurn("openai", []string{"-c"}, "what was the word?")
	if out.code != exitOK || !strings.Contains(string(e.srv.Requests()[1].Body), "heron") {
		t.Errorf("-c did not continue the session with messages: exit %d\n%s", out.code, out.stderr)
	}
}

// appForTest builds the app `run` would, for direct use of its store and
// agent.
func (e *cliEnv) appForTest() (*app, error) {
	var stdout, stderr testenv.Buffer
	c := newCLI(strings.NewReader(""), &stdout, &stderr, e.getenv, false, false)
	return c.setup(context.Background(), &routeFlags{api: "openai", baseURL: e.srv.OpenAIBaseURL(), model: testModel, workspace: e.ws}, nil, time.Second)
}

// An answer other than yes, no or always at an approval prompt asks again
// instead of counting as no.
func TestChatApprovalAsksAgain(t *testing.T) {
	e := newCLIEnv(t)
	e.srv.Script(
		fakellm.Calls(fakellm.ToolCall("write_file", `{"path":"maybe.txt","content":"m"}`)),
		fakellm.Text("Wrote maybe.txt."),
	)
	out := e.chat("openai", "write it\nyess\nsure\ny\n/exit\n")
	if out.code != exitOK {
		t.Fatalf("exit %d\n%s", out.code, out.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "maybe.txt")); err != nil {
		t.Errorf("the call approved after two unclear answers did not run: %v\n%s", err, out.stdout)
	}
	if n := strings.Count(out.stdout, "Please answer y (yes), n (no) or a (always)"); n != 2 {
		t.Errorf("asked again %d times, want 2:\n%s", n, out.stdout)
	}
}

// chat --steer on: a line typed while a turn runs joins that turn (a steer
// row, read by its next call) instead of waiting for its own turn.
func TestChatSteersTheRunningTurn(t *testing.T) {
	e := newCLIEnv(t)
	e.srv.Script(
		fakellm.Calls(fakellm.ToolCall("list_dir", `{"path":"."}`)),
		fakellm.Text("Listed, and noted the README."),
	)
	out := e.chat("openai", "list the files\nalso mention the README\n", "--steer", "on")
	if out.code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", out.code, out.stdout, out.stderr)
	}
	reqs := e.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2 (one turn)\nstdout:\n%s\nstderr:\n%s", len(reqs), out.stdout, out.stderr)
	}
	if !strings.Contains(string(reqs[len(reqs)-1].Body), "also mention the README") {
		t.Fatalf("the typed line is not in the turn's last request")
	}
	if !strings.Contains(out.stdout+out.stderr, "your message joined the running turn") {
		t.Fatalf("no steer line shown\nstdout:\n%s\nstderr:\n%s", out.stdout, out.stderr)
	}
}
