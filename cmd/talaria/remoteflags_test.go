package main

import (
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// run --server and chat --server never ignore a one-run flag: --model goes
// with a new server session; the flags the server's operator decides
// (provider, endpoint, key, workspace, database) and --max-iterations,
// which the API cannot carry, are refused with exit 2 and one line saying
// why (issue 25 item 5).
func TestServerRefusesOrPassesRouteFlags(t *testing.T) {
	e := newCLIEnv(t)
	// --model with --server names any model of the server's provider: the
	// operator allows them (the default is the configured routes only).
	e.writeConfig("serve:\n  limits:\n    default:\n      models: [\"custom/*\"]\n")
	p := e.serve()
	e.env["TALARIA_TOKEN"] = strings.Split(strings.TrimSpace(p.stdout.String()), "\n")[1]
	refused := []struct {
		flags []string
		want  string
	}{
		{[]string{"--provider", "anthropic"}, "--provider cannot be used with --server"},
		{[]string{"--api", "anthropic"}, "--api cannot be used with --server"},
		{[]string{"--base-url", "http://127.0.0.1:1/v1"}, "--base-url cannot be used with --server"},
		{[]string{"--api-key-env", "X"}, "--api-key-env cannot be used with --server"},
		{[]string{"--workspace", e.ws}, "--workspace cannot be used with --server"},
		{[]string{"--database", "/tmp/x.db"}, "--database cannot be used with --server"},
		{[]string{"--max-iterations", "1"}, "--max-iterations cannot be used with --server"},
		{[]string{"--model", "gpt-4.1-mini", "--continue"}, "--model with --server applies to a new session only"},
	}
	for _, cmd := range []string{"run", "chat"} {
		for _, tc := range refused {
			t.Run(cmd+" "+strings.Join(tc.flags, " "), func(t *testing.T) {
				args := append([]string{cmd, "--server", p.url}, tc.flags...)
				if cmd == "run" {
					args = append(args, "hi")
				}
				out := e.run("hi\n", args...)
				if out.code != exitUsage || len(errorLines(out.stderr)) != 1 || !strings.Contains(out.stderr, tc.want) {
					t.Errorf("exit %d, want 2 and one line with %q:\n%s", out.code, tc.want, out.stderr)
				}
			})
		}
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Errorf("a refused flag still reached the model: %d requests", n)
	}
	t.Run("--model goes with a new session", func(t *testing.T) {
		e.srv.Script(fakellm.Text("from the other model"))
		out := e.run("", "run", "--server", p.url, "--model", "gpt-4.1-mini", "hi")
		if out.code != exitOK || strings.TrimSpace(out.stdout) != "from the other model" {
			t.Fatalf("exit %d stdout %q:\n%s", out.code, out.stdout, out.stderr)
		}
		reqs := e.srv.Requests()
		if len(reqs) != 1 || reqs[0].Model != "gpt-4.1-mini" {
			t.Errorf("the server's call used model %q, want gpt-4.1-mini", reqs[len(reqs)-1].Model)
		}
	})
}

// A TLS certificate that cannot be loaded is a setup error before anything
// is announced, not "serving on https://…" followed by a failure.
func TestServeChecksTLSBeforeAnnouncing(t *testing.T) {
	e := newCLIEnv(t)
	out := e.run("", append([]string{"serve", "--addr", "127.0.0.1:0", "--tls-cert", "/nope.pem", "--tls-key", "/nope.key"}, e.routeArgs("openai")...)...)
	if out.code != exitUsage || strings.Contains(out.stderr, "serving on") || !strings.Contains(out.stderr, "/nope.pem") {
		t.Errorf("exit %d, want 2 naming the file and no \"serving on\":\n%s", out.code, out.stderr)
	}
}
