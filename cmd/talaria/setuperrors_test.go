package main

import (
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/turn"
)

// A missing key is one line naming the variable to set, exit 2, and no
// request is made.
func TestMissingKey(t *testing.T) {
	cases := []struct {
		name   string
		config string
		cmd    string
		flags  []string
		want   string
	}{
		{"nothing set", "", "run", nil, "OPENAI_API_KEY or ANTHROPIC_API_KEY"},
		{"openai", "", "run", []string{"--provider", "openai"}, "set OPENAI_API_KEY"},
		{"anthropic", "", "run", []string{"--provider", "anthropic"}, "set ANTHROPIC_API_KEY"},
		{"config key_env", "provider: work\nproviders:\n  work:\n    api: anthropic\n    base_url: https://api.anthropic.com\n    model: claude-sonnet-4-5\n    key_env: WORK_KEY\n",
			"run", nil, "set WORK_KEY"},
		{"chat", "", "chat", []string{"--provider", "openai"}, "set OPENAI_API_KEY"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newCLIEnv(t)
			if tc.config != "" {
				e.writeConfig(tc.config)
			}
			args := append([]string{tc.cmd, "--workspace", e.ws}, tc.flags...)
			if tc.cmd == "run" {
				args = append(args, "hi")
			}
			out := e.run("", args...)
			if out.code != exitUsage {
				t.Errorf("exit %d, want %d", out.code, exitUsage)
			}
			if strings.Count(out.stderr, "\n") != 1 || !strings.Contains(out.stderr, tc.want) {
				t.Errorf("want exactly one line containing %q, got:\n%s", tc.want, out.stderr)
			}
			if out.stdout != "" {
				t.Errorf("stdout: %q", out.stdout)
			}
		})
	}
}

// A key in the environment is enough: no config file needed. The key is
// sent, and only to the endpoint it belongs to (OPENAI_BASE_URL moves the
// built-in entry with its key, as it moves the vendor's SDK; TALARIA_BASE_URL
// would move the entry without it, see TestKeyReachesOnlyItsHost).
func TestKeyFromEnvironment(t *testing.T) {
	e := newCLIEnv(t)
	e.env["OPENAI_API_KEY"] = "sk-from-env"
	e.env["OPENAI_BASE_URL"] = e.srv.OpenAIBaseURL()
	e.env["TALARIA_PROVIDER"] = "openai"
	e.env["TALARIA_MODEL"] = testModel
	e.srv.Script(fakellm.Text("hello"))
	out := e.run("", "run", "--workspace", e.ws, "hi")
	if out.code != exitOK || out.stdout != "hello\n" {
		t.Fatalf("exit %d stdout %q\n%s", out.code, out.stdout, out.stderr)
	}
	if got := e.srv.Requests()[0].Header.Get("Authorization"); got != "Bearer sk-from-env" {
		t.Errorf("Authorization = %q", got)
	}
}

// An unreachable server (nothing listens on the port) fails fast with one
// line that says what could not be reached and what to check, for both
// wire formats. A refused connection is retried at most once: retrying a
// port nobody listens on for seconds helps nobody.
func TestUnreachableServer(t *testing.T) {
	for _, api := range []string{"openai", "anthropic"} {
		t.Run(api, func(t *testing.T) {
			e := newCLIEnv(t)
			base := "http://" + closedPort(t)
			if api == "openai" {
				base += "/v1"
			}
			start := time.Now()
			out := e.run("", "run", "--api", api, "--base-url", base, "--model", testModel, "--workspace", e.ws, "hi")
			took := time.Since(start)
			if out.code != exitOther {
				t.Errorf("exit %d, want %d", out.code, exitOther)
			}
			lines := errorLines(out.stderr)
			if len(lines) != 1 {
				t.Fatalf("want one error line, got:\n%s", out.stderr)
			}
			for _, want := range []string{"connection refused", base, "--base-url"} {
				if !strings.Contains(lines[0], want) {
					t.Errorf("error line lacks %q: %s", want, lines[0])
				}
			}
			// Generous bound: the default backoff of 3 retries took ~11s.
			if took > 8*time.Second {
				t.Errorf("took %s to report a refused connection", took)
			}

			// The same with --json --quiet: the result says how many calls.
			out = e.run("", "run", "--json", "--quiet", "--api", api, "--base-url", base, "--model", testModel, "--workspace", e.ws, "hi")
			res := decodeResult(t, out)
			if res.Exit != turn.ExitFailed || res.Failure == nil || res.APICalls > 2 {
				t.Errorf("result: exit %s, %d API calls, failure %+v; want failed after at most 2 calls", res.Exit, res.APICalls, res.Failure)
			}
			if len(errorLines(out.stderr)) != 1 {
				t.Errorf("--quiet must still print the error line:\n%s", out.stderr)
			}
		})
	}
}

// A malformed config.yaml is one line that names the file and the line,
// exit 2, for every command that reads it.
func TestMalformedConfig(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"syntax", "provider: openai\nproviders:\n  openai: [oops\n", "line "},
		{"unknown key", "provider: openai\napproval: auto\n", "line 2"},
		{"unknown nested key", "providers:\n  local:\n    api: openai\n    baseurl: http://x\n", "line 4"},
		{"wrong type", "max_iterations: lots\n", "line 1"},
		{"two problems", "approval: auto\nmax_iteration: 3\n", "line 1"},
		{"bad duration", "shell_timeout: soon\n", "line 1"},
		{"bad value", "approvals: sometimes\n", "approvals"},
	}
	for _, tc := range cases {
		for _, cmd := range [][]string{{"run", "hi"}, {"sessions", "list"}, {"chat"}, {"doctor"}} {
			t.Run(tc.name+"/"+cmd[0], func(t *testing.T) {
				e := newCLIEnv(t)
				path := e.writeConfig(tc.body)
				out := e.run("", cmd...)
				if out.code != exitUsage {
					t.Errorf("exit %d, want %d", out.code, exitUsage)
				}
				all := out.stderr + out.stdout
				if strings.Count(all, "\n") != 1 {
					t.Errorf("want exactly one line, got:\n%s", all)
				}
				if !strings.Contains(all, path) || !strings.Contains(all, tc.want) {
					t.Errorf("want the file %s and %q in:\n%s", path, tc.want, all)
				}
			})
		}
	}
}
