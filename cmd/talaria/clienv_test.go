package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/turn"
)

// cliEnv runs the CLI in-process the way a person would from a shell: its
// own TALARIA_HOME and workspace in temp dirs, an environment that holds
// only what the test puts there (so a developer's real OPENAI_API_KEY never
// leaks in), and a scripted model server over real HTTP.
type cliEnv struct {
	t    *testing.T
	home string
	ws   string
	env  map[string]string
	srv  *fakellm.Server
}

func newCLIEnv(t *testing.T) *cliEnv {
	t.Helper()
	e := &cliEnv{t: t, home: t.TempDir(), ws: t.TempDir()}
	e.env = map[string]string{"TALARIA_HOME": e.home}
	e.srv = fakellm.New()
	t.Cleanup(e.srv.Close)
	return e
}

func (e *cliEnv) getenv(k string) string { return e.env[k] }

// cliOut is what one command printed and returned.
type cliOut struct {
	code   int
	stdout string
	stderr string
}

// run runs `talaria args...` with stdin.
func (e *cliEnv) run(stdin string, args ...string) cliOut {
	e.t.Helper()
	return e.runReader(strings.NewReader(stdin), args...)
}

func (e *cliEnv) runReader(stdin io.Reader, args ...string) cliOut {
	e.t.Helper()
	var stdout, stderr testenv.Buffer
	code := run(context.Background(), args, stdin, &stdout, &stderr, e.getenv)
	return cliOut{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// testModel is a model the catalogue knows, so runs print no "unknown
// model" notice and the usage has a price.
const testModel = "gpt-4.1"

// routeArgs points run/chat at the scripted server in the given wire format,
// with the workspace, the way the README tells people to use a local server.
func (e *cliEnv) routeArgs(api string) []string {
	base := e.srv.OpenAIBaseURL()
	if api == "anthropic" {
		base = e.srv.AnthropicBaseURL()
	}
	return []string{"--api", api, "--base-url", base, "--model", testModel, "--workspace", e.ws}
}

// runTurn runs `talaria run <route flags> extra... prompt`.
func (e *cliEnv) runTurn(api string, extra []string, prompt string) cliOut {
	e.t.Helper()
	args := append([]string{"run"}, e.routeArgs(api)...)
	args = append(args, extra...)
	return e.run("", append(args, prompt)...)
}

// writeConfig writes config.yaml into TALARIA_HOME.
func (e *cliEnv) writeConfig(body string) string {
	e.t.Helper()
	p := filepath.Join(e.home, "config.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// writeFile puts a file into the workspace.
func (e *cliEnv) writeFile(name, body string) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.ws, name), []byte(body), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// noViolations fails the test if the server saw an invalid transcript.
func (e *cliEnv) noViolations() {
	e.t.Helper()
	for _, v := range e.srv.Violations() {
		e.t.Errorf("fakellm strict validation: %s", v)
	}
}

// decodeResult parses `run --json` output.
func decodeResult(t *testing.T, out cliOut) turn.Result {
	t.Helper()
	var res turn.Result
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil {
		t.Fatalf("stdout is not a turn result: %v\nstdout:\n%s\nstderr:\n%s", err, out.stdout, out.stderr)
	}
	return res
}

// errorLines are the stderr lines that start "talaria:" — the one-line
// errors, as opposed to progress.
func errorLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "talaria:") {
			out = append(out, l)
		}
	}
	return out
}

// closedPort returns a 127.0.0.1 address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// toolResult is the text of the result paired to the first call of name in
// a recorded request, and whether there was one.
func toolResult(req fakellm.Request, name string) (string, bool) {
	id := ""
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			if c.Name == name && id == "" {
				id = c.ID
			}
		}
	}
	for _, m := range req.Messages {
		if m.Role == "tool" && m.ToolCallID == id && id != "" {
			return m.Text, true
		}
	}
	return "", false
}
