package main

import (
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// max_retries: 0 means no retries, not the default three.
func TestMaxRetriesZeroMeansNone(t *testing.T) {
	for _, tc := range []struct {
		config string
		calls  int
	}{
		{"max_retries: 0\n", 1},
		{"max_retries: 1\n", 2},
		{"", 4}, // the default: three retries
	} {
		t.Run(strings.TrimSpace(tc.config), func(t *testing.T) {
			e := newCLIEnv(t)
			e.writeConfig(tc.config)
			for range 5 {
				// retry-after-ms keeps the real backoff out of the test.
				e.srv.Script(fakellm.RawError(500, `{"error":{"message":"boom","type":"server_error"}}`, "retry-after-ms: 1"))
			}
			out := e.runTurn("openai", nil, "hi")
			if out.code == exitOK {
				t.Fatalf("a failing server ended the run with exit 0:\n%s", out.stderr)
			}
			if n := len(e.srv.Requests()); n != tc.calls {
				t.Errorf("%d calls, want %d:\n%s", n, tc.calls, out.stderr)
			}
			if tc.calls == 1 && (strings.Contains(out.stderr, "(retry") || strings.Contains(out.stderr, "gave up")) {
				t.Errorf("max_retries: 0 still speaks of retries:\n%s", out.stderr)
			}
		})
	}
}

// A provider whose key_env variable is unset sends no key: run and chat say
// so on stderr, and doctor shows a warning, not a failure (a local server
// may need no key).
func TestUnsetKeyEnvIsSaid(t *testing.T) {
	e := newCLIEnv(t)
	e.writeConfig("provider: local\nproviders:\n  local:\n    base_url: " + e.srv.OpenAIBaseURL() + "\n    key_env: LOCAL_KEY\n    model: " + testModel + "\n")
	e.srv.Script(fakellm.Text("ok"))
	out := e.run("", "run", "--workspace", e.ws, "hi")
	if out.code != exitOK || strings.TrimSpace(out.stdout) != "ok" {
		t.Fatalf("exit %d stdout %q:\n%s", out.code, out.stdout, out.stderr)
	}
	if !strings.Contains(out.stderr, "warning: LOCAL_KEY is not set, so no key is sent to "+e.srv.OpenAIBaseURL()) {
		t.Errorf("run did not warn about the unset key variable:\n%s", out.stderr)
	}
	if r := e.srv.Requests(); len(r) != 1 || r[0].Header.Get("Authorization") != "" {
		t.Errorf("requests %d, want one without a key", len(r))
	}
	doc := e.run("", "doctor")
	if doc.code != exitOK || !strings.Contains(doc.stdout, "WARN provider local (default)") || !strings.Contains(doc.stdout, "key_env LOCAL_KEY is not set") {
		t.Errorf("doctor exit %d, want 0 with a warning line:\n%s%s", doc.code, doc.stdout, doc.stderr)
	}
	e.env["LOCAL_KEY"] = "k"
	e.srv.Script(fakellm.Text("ok"))
	if out := e.run("", "run", "--workspace", e.ws, "hi"); strings.Contains(out.stderr, "warning") {
		t.Errorf("warned with the key set:\n%s", out.stderr)
	}
}

// A 401 from a server that was sent no key says so and what to set, not
// "the API key was refused… check the key for custom" (issue 25 item 9).
func TestUnauthorizedWithoutAKeySaysNoneWasSent(t *testing.T) {
	cases := []struct {
		name   string
		config string
		args   []string
		want   []string
	}{
		{"--base-url", "", []string{"--api", "openai", "--base-url", "{URL}", "--model", testModel},
			[]string{"No API key was sent to the server at {URL}", "--api-key-env"}},
		{"config entry with an unset key_env", "provider: local\nproviders:\n  local:\n    base_url: {URL}\n    key_env: LOCAL_KEY\n    model: " + testModel + "\n", nil,
			[]string{"No API key was sent to local", "set LOCAL_KEY"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newCLIEnv(t)
			u := e.srv.OpenAIBaseURL()
			if tc.config != "" {
				e.writeConfig(strings.ReplaceAll(tc.config, "{URL}", u))
			}
			e.srv.Script(fakellm.RawError(401, openAIBadKeyBody))
			args := []string{"run", "--workspace", e.ws}
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "{URL}", u))
			}
			out := e.run("", append(args, "hi")...)
			if out.code != exitAuth {
				t.Errorf("exit %d, want %d", out.code, exitAuth)
			}
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "{URL}", u); !strings.Contains(out.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, out.stderr)
				}
			}
			if strings.Contains(out.stderr, "was refused") || strings.Contains(out.stderr, "custom") {
				t.Errorf("stderr speaks of a refused key or of \"custom\":\n%s", out.stderr)
			}
		})
	}
}
