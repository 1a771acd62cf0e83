package main

import (
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// A billing failure that benches the key names the way out on stderr: how
// long the bench lasts (the engine's words) and the command that lifts it
// (the CLI's); the next run, refused without a request, says so with the
// same command.
func TestBillingBenchNamesTheWayOut(t *testing.T) {
	e := newCLIEnv(t)
	e.env["PAID_KEY"] = "sk-paid"
	e.writeConfig("providers:\n  paid:\n    base_url: " + e.srv.OpenAIBaseURL() + "\n    key_env: PAID_KEY\n    model: " + testModel + "\n")
	e.srv.Script(fakellm.RawError(429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`))
	out := e.run("", "run", "--provider", "paid", "--workspace", e.ws, "hi")
	if out.code != exitAuth {
		t.Fatalf("exit %d, want %d\n%s", out.code, exitAuth, out.stderr)
	}
	for _, want := range []string{"benched for 1h", "After adding credit, run `talaria keys reset paid`"} {
		if !strings.Contains(out.stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, out.stderr)
		}
	}
	n := len(e.srv.Requests())
	out = e.run("", "run", "--provider", "paid", "--workspace", e.ws, "hi")
	if out.code != exitAuth || len(e.srv.Requests()) != n {
		t.Fatalf("benched key: exit %d, %d new requests\n%s", out.code, len(e.srv.Requests())-n, out.stderr)
	}
	for _, want := range []string{"No request was sent.", "talaria keys reset paid"} {
		if !strings.Contains(out.stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, out.stderr)
		}
	}
}
