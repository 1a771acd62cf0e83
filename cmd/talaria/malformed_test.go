package main

import (
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// A 200 reply that is not a chat completion ({"foo":1}) is a malformed
// response, said once as such, not four "empty answers" with an estimated
// cost the summary then contradicts (issue 25 item 9).
func TestMalformedReplyIsSaidSo(t *testing.T) {
	for _, api := range []string{"openai", "anthropic"} {
		t.Run(api, func(t *testing.T) { malformedReplyIsSaidSo(t, api) })
	}
}

func malformedReplyIsSaidSo(t *testing.T, api string) {
	e := newCLIEnv(t)
	for range 6 {
		e.srv.Script(fakellm.RawError(200, `{"foo":1}`, "Content-Type: application/json"))
	}
	out := e.runTurn(api, nil, "hi")
	if out.code == exitOK {
		t.Fatalf("exit 0 for a malformed reply:\n%s", out.stderr)
	}
	if n := len(e.srv.Requests()); n != 1 {
		t.Errorf("%d calls, want 1: a malformed reply is not retried as an empty answer", n)
	}
	if !strings.Contains(out.stderr, "malformed response") || strings.Contains(out.stderr, "empty answer") {
		t.Errorf("stderr does not call it a malformed response:\n%s", out.stderr)
	}
	if strings.Contains(out.stderr, "estimated cost") || !strings.Contains(out.stderr, "$0.0000") {
		t.Errorf("the cost is counted more than once or disagrees with the summary:\n%s", out.stderr)
	}
}
