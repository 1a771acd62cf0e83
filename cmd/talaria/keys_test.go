package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

const badKeyBody = `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`

// A 401 from one key-less local server benches nothing: the next server
// (also provider "custom") and the same server again are both tried.
func TestKeylessServerNeverBenched(t *testing.T) {
	e := newCLIEnv(t)
	other := fakellm.New()
	t.Cleanup(other.Close)
	e.srv.Script(fakellm.RawError(401, badKeyBody))
	out := e.runTurn("openai", nil, "hi")
	if out.code != exitAuth {
		t.Fatalf("first server: exit %d, want %d\n%s", out.code, exitAuth, out.stderr)
	}
	if strings.Contains(out.stderr, "waiting will not fix") || strings.Contains(out.stderr, "benched") {
		t.Errorf("a key-less server's 401 talks of benched keys:\n%s", out.stderr)
	}
	if got := e.srv.Requests()[0].Header.Get("Authorization"); got != "" {
		t.Errorf("a key-less server was sent Authorization %q", got)
	}
	other.Script(fakellm.Text("from the other server"))
	out = e.run("", "run", "--api", "openai", "--base-url", other.OpenAIBaseURL(), "--model", testModel, "--workspace", e.ws, "hi")
	if out.code != exitOK {
		t.Fatalf("second server: exit %d\n%s", out.code, out.stderr)
	}
	e.srv.Script(fakellm.Text("back"))
	if out = e.runTurn("openai", nil, "hi"); out.code != exitOK {
		t.Fatalf("first server again: exit %d\n%s", out.code, out.stderr)
	}
}

// A refused key is benched for its provider and endpoint only; keys status
// and doctor show it, keys reset lifts it.
func TestKeysStatusAndReset(t *testing.T) {
	e := newCLIEnv(t)
	other := fakellm.New()
	t.Cleanup(other.Close)
	e.env["SHARED_KEY"] = "sk-shared"
	e.writeConfig("providers:\n  a:\n    base_url: " + e.srv.OpenAIBaseURL() + "\n    key_env: SHARED_KEY\n    model: " + testModel +
		"\n  b:\n    base_url: " + other.OpenAIBaseURL() + "\n    key_env: SHARED_KEY\n    model: " + testModel + "\n")
	e.srv.Script(fakellm.RawError(401, badKeyBody))
	if out := e.run("", "run", "--provider", "a", "--workspace", e.ws, "hi"); out.code != exitAuth {
		t.Fatalf("exit %d, want %d\n%s", out.code, exitAuth, out.stderr)
	}

	out := e.run("", "keys", "status", "--json")
	var list []benchedKey
	if err := json.Unmarshal([]byte(out.stdout), &list); err != nil || out.code != exitOK {
		t.Fatalf("keys status --json: exit %d %v\n%s%s", out.code, err, out.stdout, out.stderr)
	}
	if len(list) != 1 || list[0].Provider != "a" || list[0].BaseURL != e.srv.OpenAIBaseURL() || list[0].Reason != "auth" || list[0].Key != "key 1 of 1" {
		t.Fatalf("benched = %+v", list)
	}
	if out := e.run("", "keys", "status"); !strings.Contains(out.stdout, list[0].KeyID) || strings.Contains(out.stdout, "sk-shared") {
		t.Errorf("keys status (the key itself must never show):\n%s", out.stdout)
	}
	if out := e.run("", "doctor"); !strings.Contains(out.stdout, "benched: a key key 1 of 1") {
		t.Errorf("doctor does not show the benched key:\n%s", out.stdout)
	}

	// The same key at another endpoint is not benched.
	other.Script(fakellm.Text("b works"))
	if out := e.run("", "run", "--provider", "b", "--workspace", e.ws, "hi"); out.code != exitOK {
		t.Fatalf("provider b with the same key: exit %d\n%s", out.code, out.stderr)
	}
	// Benched at a: refused without a request.
	n := len(e.srv.Requests())
	if out := e.run("", "run", "--provider", "a", "--workspace", e.ws, "hi"); out.code != exitAuth || len(e.srv.Requests()) != n {
		t.Fatalf("benched key: exit %d, %d new requests\n%s", out.code, len(e.srv.Requests())-n, out.stderr)
	}
	if out := e.run("", "keys", "reset", "a"); out.code != exitOK || !strings.Contains(out.stdout, "lifted 1") {
		t.Fatalf("keys reset: exit %d\n%s%s", out.code, out.stdout, out.stderr)
	}
	if out := e.run("", "keys", "status"); !strings.Contains(out.stdout, "no key is benched") {
		t.Errorf("after reset:\n%s", out.stdout)
	}
	e.srv.Script(fakellm.Text("a works again"))
	if out := e.run("", "run", "--provider", "a", "--workspace", e.ws, "hi"); out.code != exitOK {
		t.Fatalf("after reset: exit %d\n%s", out.code, out.stderr)
	}
	if out := e.run("", "keys", "frobnicate"); out.code != exitUsage || !strings.Contains(out.stderr, "see talaria keys --help") {
		t.Errorf("bad subcommand: exit %d %s", out.code, out.stderr)
	}
}
