package turn_test

import (
	"testing"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/turn"
)

// The engine classifies by the wire format the adapter reports on its
// error; the route says nothing about it. An Anthropic error body whose
// {"type":"error"} envelope a proxy stripped is still read as Anthropic's
// from the anthropic adapter (a 404 not_found_error is the model, a 400
// request_too_large the payload), while the same bodies from an
// OpenAI-compatible server are read generically, as they always were.
func TestAnthropicShapeClassifiedFromTheAdapter(t *testing.T) {
	const (
		notFound = `{"error":{"type":"not_found_error","message":"model: claude-3-opus-latest"}}`
		tooLarge = `{"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}`
	)
	for _, tc := range []struct {
		api    string
		status int
		body   string
		want   failover.Class
	}{
		{"anthropic", 404, notFound, failover.ClassModelNotFound},
		{"openai", 404, notFound, failover.ClassEndpointNotFound},
		{"anthropic", 400, tooLarge, failover.ClassPayloadTooLarge},
		{"openai-responses", 400, tooLarge, failover.ClassFormatError},
	} {
		t.Run(tc.api+"/"+string(tc.want), func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: tc.api, NoBuiltins: true, Configure: func(c *agent.Config) {
				c.Limits.NoRetries = true
			}})
			env.Srv.Script(fakellm.RawError(tc.status, tc.body))
			res := env.Run("hi")
			if res.Failure == nil || res.Failure.Class != tc.want {
				t.Fatalf("exit %s, failure %+v; want class %s", res.Exit, res.Failure, tc.want)
			}
		})
	}
}

// A connection the adapter could not make is explained with the endpoint
// the adapter called, which the failure also carries for front ends.
func TestUnreachableFailureNamesAdapterEndpoint(t *testing.T) {
	var base string
	env := testenv.New(t, testenv.Options{API: "anthropic", NoBuiltins: true, Configure: func(c *agent.Config) {
		c.Limits.NoRetries = true
		base = deadRoute(t, &c.Routes[0], "anthropic")
	}})
	res := env.Run("hi")
	if res.Exit != turn.ExitFailed || res.Failure == nil || res.Failure.BaseURL != base {
		t.Fatalf("exit %s, failure %+v; want one at %s", res.Exit, res.Failure, base)
	}
}
