package main

import (
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// A partial entry for a built-in provider keeps its defaults, so a key goes
// only to the host of the vendor it belongs to. Two real model servers
// stand in for the two vendors (OPENAI_BASE_URL / ANTHROPIC_BASE_URL move
// the built-ins, as they move the vendors' SDKs); neither may see the
// other's key.
func TestPartialBuiltinEntryKeepsKeyOnItsHost(t *testing.T) {
	t.Run("anthropic entry with key_env and model only", func(t *testing.T) {
		e := newCLIEnv(t)
		anth := fakellm.New()
		t.Cleanup(anth.Close)
		e.env["OPENAI_BASE_URL"] = e.srv.OpenAIBaseURL()
		e.env["ANTHROPIC_BASE_URL"] = anth.AnthropicBaseURL()
		e.env["OPENAI_API_KEY"] = "sk-openai-secret"
		e.env["MY_KEY"] = "sk-ant-secret"
		e.writeConfig("provider: anthropic\nproviders:\n  anthropic:\n    key_env: MY_KEY\n    model: claude-sonnet-4-5\n")
		anth.Script(fakellm.Text("from anthropic"))
		out := e.run("", "run", "--workspace", e.ws, "hi")
		if out.code != exitOK || strings.TrimSpace(out.stdout) != "from anthropic" {
			t.Fatalf("exit %d stdout %q\n%s", out.code, out.stdout, out.stderr)
		}
		if n := len(e.srv.Requests()); n != 0 {
			t.Errorf("the OpenAI host got %d requests; the Anthropic key must never reach it", n)
		}
		reqs := anth.Requests()
		if len(reqs) != 1 {
			t.Fatalf("anthropic host got %d requests, want 1", len(reqs))
		}
		if reqs[0].API != fakellm.APIAnthropic || reqs[0].Header.Get("X-Api-Key") != "sk-ant-secret" || reqs[0].Header.Get("Authorization") != "" {
			t.Errorf("anthropic request: api %s x-api-key %q authorization %q", reqs[0].API, reqs[0].Header.Get("X-Api-Key"), reqs[0].Header.Get("Authorization"))
		}
	})
	t.Run("openai entry with key_strategy only", func(t *testing.T) {
		e := newCLIEnv(t)
		e.env["OPENAI_BASE_URL"] = e.srv.OpenAIBaseURL()
		e.env["OPENAI_API_KEY"] = "sk-a,sk-b"
		e.writeConfig("providers:\n  openai:\n    key_strategy: round-robin\n")
		e.srv.Script(fakellm.Text("one"))
		out := e.run("", "run", "--workspace", e.ws, "hi")
		if out.code != exitOK || strings.TrimSpace(out.stdout) != "one" {
			t.Fatalf("exit %d stdout %q\n%s", out.code, out.stdout, out.stderr)
		}
		if reqs := e.srv.Requests(); len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer sk-a" {
			t.Errorf("want one request with the first key, got %d", len(reqs))
		}
	})
	t.Run("doctor shows the merged values", func(t *testing.T) {
		e := newCLIEnv(t)
		e.env["MY_KEY"] = "k"
		e.writeConfig("provider: anthropic\nproviders:\n  anthropic:\n    key_env: MY_KEY\n")
		out := e.run("", "doctor")
		if out.code != exitOK || !strings.Contains(out.stdout, "provider anthropic (default): anthropic API at https://api.anthropic.com, model claude-sonnet-4-5") {
			t.Errorf("doctor exit %d:\n%s%s", out.code, out.stdout, out.stderr)
		}
	})
	t.Run("a vendor key aimed at another vendor's host is refused", func(t *testing.T) {
		e := newCLIEnv(t)
		e.env["ANTHROPIC_API_KEY"] = "sk-ant-secret"
		e.writeConfig("provider: mine\nproviders:\n  mine:\n    api: openai\n    base_url: https://api.openai.com/v1\n    key_env: ANTHROPIC_API_KEY\n    model: gpt-4.1\n")
		out := e.run("", "run", "--workspace", e.ws, "hi")
		if out.code != exitUsage || !strings.Contains(out.stderr, "ANTHROPIC_API_KEY") || strings.Count(out.stderr, "\n") != 1 {
			t.Errorf("exit %d, want 2 and one line naming the key variable:\n%s", out.code, out.stderr)
		}
	})
}

// `run --api openai` without a key names what is missing in the user's
// terms, not an entry called "custom" the user never typed.
func TestAPIFlagAloneNamesTheVendor(t *testing.T) {
	e := newCLIEnv(t)
	out := e.run("", "run", "--api", "openai", "--workspace", e.ws, "hi")
	if out.code != exitUsage || strings.Contains(out.stderr, "custom") ||
		!strings.Contains(out.stderr, "no API key for OpenAI: set OPENAI_API_KEY") || !strings.Contains(out.stderr, "--base-url") {
		t.Errorf("exit %d:\n%s", out.code, out.stderr)
	}
}
