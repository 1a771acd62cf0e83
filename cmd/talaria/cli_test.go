package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/turn"
)

// scriptMultiTool is a two-round task: list the workspace, read two files
// in parallel, then answer.
func scriptMultiTool(srv *fakellm.Server) {
	srv.Script(
		fakellm.TextCalls("Looking around.", fakellm.ToolCall("list_dir", `{}`)),
		fakellm.Calls(
			fakellm.ToolCall("read_file", `{"path":"a.txt"}`),
			fakellm.ToolCall("read_file", `{"path":"b.txt"}`),
		),
		fakellm.Text("a.txt says alpha and b.txt says beta."),
	)
}

// `talaria run` against an OpenAI-compatible and an Anthropic-compatible
// server completes a multi-tool task: the answer alone on stdout, progress
// and the summary on stderr, the tool results really sent back.
func TestRunMultiToolTask(t *testing.T) {
	for _, api := range []string{"openai", "anthropic"} {
		t.Run(api, func(t *testing.T) {
			e := newCLIEnv(t)
			e.writeFile("a.txt", "alpha\n")
			e.writeFile("b.txt", "beta\n")
			scriptMultiTool(e.srv)

			out := e.runTurn(api, nil, "what do the files say?")
			if out.code != exitOK {
				t.Fatalf("exit %d\nstderr:\n%s", out.code, out.stderr)
			}
			if out.stdout != "a.txt says alpha and b.txt says beta.\n" {
				t.Errorf("stdout = %q; want only the final answer", out.stdout)
			}
			for _, want := range []string{"→ list_dir", "→ read_file", "✓ read_file", "completed · 3 API calls · 2 tool rounds"} {
				if !strings.Contains(out.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, out.stderr)
				}
			}
			reqs := e.srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("server got %d requests, want 3", len(reqs))
			}
			for _, want := range []string{"alpha", "beta"} {
				if !strings.Contains(string(reqs[2].Body), want) {
					t.Errorf("last request does not carry the tool result %q", want)
				}
			}
			if reqs[0].API != api {
				t.Errorf("server saw the %s API, want %s", reqs[0].API, api)
			}
			e.noViolations()
		})
	}
}

// --json prints the TurnResult and nothing else on stdout; --quiet keeps
// stderr empty on success.
func TestRunJSON(t *testing.T) {
	e := newCLIEnv(t)
	e.writeFile("a.txt", "alpha\n")
	e.writeFile("b.txt", "beta\n")
	scriptMultiTool(e.srv)
	out := e.runTurn("openai", []string{"--json", "--quiet"}, "go")
	if out.code != exitOK {
		t.Fatalf("exit %d\n%s", out.code, out.stderr)
	}
	res := decodeResult(t, out)
	if res.Exit != turn.ExitCompleted || res.APICalls != 3 || res.ToolRounds != 2 || res.ToolCalls != 3 || res.Iterations != 3 {
		t.Errorf("result = exit %s, %d calls, %d rounds, %d tool calls, %d iterations; want completed, 3, 2, 3, 3",
			res.Exit, res.APICalls, res.ToolRounds, res.ToolCalls, res.Iterations)
	}
	if res.SessionID == "" || res.TurnID == "" || res.FinalText != "a.txt says alpha and b.txt says beta." {
		t.Errorf("result ids/text: %+v", res)
	}
	if res.Provider != "custom" || res.Model != testModel || !res.Usage.Reported || !res.CostKnown || res.CostUSD <= 0 {
		t.Errorf("provider %q model %q usage %+v cost %v/%v", res.Provider, res.Model, res.Usage, res.CostUSD, res.CostKnown)
	}
	if out.stderr != "" {
		t.Errorf("--quiet printed on stderr:\n%s", out.stderr)
	}
}

// --session ID continues that session even when a newer one exists;
// -c / --continue continue the most recent one. The next request carries
// the chosen session's earlier turn and not the other's.
func TestRunContinuesSession(t *testing.T) {
	cases := []struct {
		name     string
		flags    func(older, newer string) []string
		want     string // session: "older" or "newer"
		has, not string
	}{
		{"session", func(o, _ string) []string { return []string{"--session", o} }, "older", "pelican", "flamingo"},
		{"c", func(string, string) []string { return []string{"-c"} }, "newer", "flamingo", "pelican"},
		{"continue", func(string, string) []string { return []string{"--continue"} }, "newer", "flamingo", "pelican"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newCLIEnv(t)
			e.srv.Script(fakellm.Text("noted pelican"), fakellm.Text("noted flamingo"), fakellm.Text("the word"))
			older := decodeResult(t, e.runTurn("openai", []string{"--json"}, "remember the word pelican"))
			newer := decodeResult(t, e.runTurn("openai", []string{"--json"}, "remember the word flamingo"))
			if older.SessionID == newer.SessionID {
				t.Fatalf("two plain runs shared session %s", older.SessionID)
			}
			wantID := map[string]string{"older": older.SessionID, "newer": newer.SessionID}[tc.want]

			out := e.runTurn("openai", append([]string{"--json"}, tc.flags(older.SessionID, newer.SessionID)...), "what was the word?")
			res := decodeResult(t, out)
			if res.Exit != turn.ExitCompleted || res.SessionID != wantID {
				t.Fatalf("exit %s in session %s; want completed in %s\n%s", res.Exit, res.SessionID, wantID, out.stderr)
			}
			reqs := e.srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests, want 3", len(reqs))
			}
			last := reqs[2]
			if len(last.Messages) != 3 {
				t.Errorf("continued request has %d messages, want user, assistant, user", len(last.Messages))
			}
			body := string(last.Body)
			if !strings.Contains(body, tc.has) || strings.Contains(body, tc.not) {
				t.Errorf("continued request should carry %q and not %q: %s", tc.has, tc.not, body)
			}
			e.noViolations()
		})
	}
}

func TestRunArgumentErrors(t *testing.T) {
	e := newCLIEnv(t)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no prompt", []string{"run", "--api", "openai", "--base-url", e.srv.OpenAIBaseURL(), "--model", "m"}, "no prompt"},
		{"session and continue", []string{"run", "--session", "x", "-c", "hi"}, "cannot be used together"},
		{"unknown session", append(append([]string{"run"}, e.routeArgs("openai")...), "--session", "nope", "hi"), `no session "nope"`},
		{"continue without sessions", append(append([]string{"run"}, e.routeArgs("openai")...), "-c", "hi"), "no session yet"},
		{"bad api", []string{"run", "--api", "palm", "--base-url", "http://127.0.0.1:1", "--model", "m", "hi"}, "use one of openai, openai-responses, anthropic, gemini"},
		{"bad base url", []string{"run", "--api", "openai", "--base-url", "localhost", "--model", "m", "hi"}, "is not a URL"},
		{"unknown provider", []string{"run", "--provider", "nosuch", "hi"}, `provider "nosuch" is not configured`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := e.run("", tc.args...)
			if out.code != exitUsage {
				t.Errorf("exit %d, want %d\nstderr:\n%s", out.code, exitUsage, out.stderr)
			}
			lines := errorLines(out.stderr)
			if len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Errorf("want one error line containing %q, got:\n%s", tc.want, out.stderr)
			}
		})
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Errorf("argument errors reached the server %d times", n)
	}
}

// A prompt of "-" is read from stdin.
func TestRunPromptFromStdin(t *testing.T) {
	e := newCLIEnv(t)
	e.srv.Script(fakellm.Text("ok"))
	args := append(append([]string{"run"}, e.routeArgs("openai")...), "-")
	out := e.run("a prompt from a pipe\n", args...)
	if out.code != exitOK || out.stdout != "ok\n" {
		t.Fatalf("exit %d stdout %q\n%s", out.code, out.stdout, out.stderr)
	}
	if got := e.srv.Requests()[0].Messages[0].Text; got != "a prompt from a pipe" {
		t.Errorf("prompt sent = %q", got)
	}
}

// A turn stopped by the iteration budget exits 7 and says why, even with
// --quiet.
func TestRunBudgetExitCode(t *testing.T) {
	e := newCLIEnv(t)
	e.srv.SetDefault(func(r fakellm.Request) fakellm.Step {
		if len(r.Tools) == 0 {
			return fakellm.Text("I kept listing.")
		}
		return fakellm.Calls(fakellm.ToolCall("list_dir", `{}`))
	})
	out := e.runTurn("openai", []string{"--max-iterations", "2", "--quiet"}, "list forever")
	if out.code != exitLimit {
		t.Fatalf("exit %d, want %d\n%s", out.code, exitLimit, out.stderr)
	}
	if out.stdout != "I kept listing.\n" {
		t.Errorf("stdout %q", out.stdout)
	}
	if lines := errorLines(out.stderr); len(lines) != 1 || !strings.Contains(lines[0], "max_iterations") {
		t.Errorf("want one error line about max_iterations, got:\n%s", out.stderr)
	}
}

func TestVersion(t *testing.T) {
	e := newCLIEnv(t)
	for _, arg := range []string{"version", "--version", "-v"} {
		t.Run(arg, func(t *testing.T) {
			out := e.run("", arg)
			if out.code != exitOK || out.stdout != "talaria "+versionString()+"\n" || out.stderr != "" {
				t.Errorf("exit %d stdout %q stderr %q", out.code, out.stdout, out.stderr)
			}
		})
	}
}

// A binary built without -ldflags reports the module version or the VCS
// revision Go embedded, not a bare "dev".
func TestBuildVersion(t *testing.T) {
	cases := []struct {
		name, ldflags string
		bi            *debug.BuildInfo
		want          string
	}{
		{"ldflags win", "v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}}, "v1.2.3"},
		{"go install @version", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}}, "v0.9.0"},
		{"go build in a checkout", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "4514ede0123456789abcdef"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			"dev-4514ede01234-modified (2026-12-01T10:00:00Z)"},
		{"nothing known", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
		// Go 1.24+ embeds a pseudo-version for go build in a checkout; the
		// README promises dev-<rev> (issue 25 minor).
		{"go build in a checkout, pseudo-version", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201100000-4514ede01234+dirty"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "4514ede0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}},
			"dev-4514ede01234-modified"},
		{"go install @commit keeps its pseudo-version", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201100000-4514ede01234"}}, "v0.0.0-20261201100000-4514ede01234"},
		{"prerelease pseudo-version", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.4-0.20261201100000-4514ede01234"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "4514ede0123456789abcdef"}}},
			"dev-4514ede01234"},
		{"a tagged release with VCS settings", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "4514ede0123456789abcdef"}}},
			"v1.2.3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := buildVersion(tc.ldflags, tc.bi); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestUnknownCommandAndUsage(t *testing.T) {
	e := newCLIEnv(t)
	if out := e.run("", "frobnicate"); out.code != exitUsage || !strings.Contains(out.stderr, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: exit %d\n%s", out.code, out.stderr)
	}
	if out := e.run(""); out.code != exitUsage || !strings.Contains(out.stderr, "Usage:") {
		t.Errorf("no command: exit %d\n%s", out.code, out.stderr)
	}
	if out := e.run("", "help"); out.code != exitOK || !strings.Contains(out.stdout, "talaria run") {
		t.Errorf("help: exit %d\n%s", out.code, out.stdout)
	}
}

// The workspace flag confines the tools: a file written by the agent lands
// in --workspace, not in the process's directory.
func TestRunWorkspaceFlag(t *testing.T) {
	e := newCLIEnv(t)
	e.srv.Script(fakellm.Calls(fakellm.ToolCall("write_file", `{"path":"w.txt","content":"here"}`)), fakellm.Text("written"))
	out := e.runTurn("openai", []string{"--yes"}, "write")
	if out.code != exitOK {
		t.Fatalf("exit %d\n%s", out.code, out.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(e.ws, "w.txt")); err != nil || string(b) != "here" {
		t.Errorf("w.txt in the workspace: %q, %v", b, err)
	}
}
