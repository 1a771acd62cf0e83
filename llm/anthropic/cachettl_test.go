package anthropic_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/anthropic"
)

// ttlRequest is a cached request with every kind of breakpoint: the last
// tool, the system prompt and the newest two user turns.
func ttlRequest(wire *llm.WireCache) *llm.Request {
	return &llm.Request{
		Model:  "claude-sonnet-4-5",
		System: "You are terse.",
		Messages: []llm.Message{
			llm.NewText(llm.RoleUser, "first"),
			llm.NewText(llm.RoleAssistant, "ok"),
			llm.NewText(llm.RoleUser, "second"),
		},
		Tools:       []llm.ToolSpec{{Name: "noop", Parameters: []byte(`{"type":"object"}`)}},
		PromptCache: true,
		Stable:      2,
		Wire:        wire,
	}
}

// A provider set to the 1-hour tier marks every breakpoint with
// ttl "1h", the strict server accepts it, the bytes are the same on every
// call (with and without the wire cache), and the usage's 1-hour writes
// are read for the cost. The default tier sends no ttl at all (issue 29
// item 8).
func TestCacheTTLTier(t *testing.T) {
	for _, tc := range []struct {
		name, ttl, want string
		wantTTL         bool
	}{
		{"default tier", "", "5m", false},
		{"5m named", anthropic.TTL5m, "5m", false},
		{"1h tier", anthropic.TTL1h, "1h", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakellm.New()
			t.Cleanup(srv.Close)
			srv.Script(
				fakellm.Step{Text: "one", Usage: &fakellm.Usage{Input: 10, Output: 2, CacheWrite: 300, CacheWrite1h: 300}},
				fakellm.Text("two"), fakellm.Text("three"))
			p := anthropic.New(anthropic.Config{BaseURL: srv.AnthropicBaseURL(), APIKey: "k", CacheTTL: tc.ttl})
			var wire llm.WireCache
			var bodies [][]byte
			for i, req := range []*llm.Request{ttlRequest(nil), ttlRequest(&wire), ttlRequest(&wire)} {
				resp, err := llm.Collect(p.Stream(context.Background(), req), nil)
				if err != nil {
					t.Fatalf("call %d: %v (violations %v)", i, err, srv.Violations())
				}
				if i == 0 && tc.wantTTL && resp.Usage.CacheWrite1hTokens != 300 {
					t.Errorf("usage %+v: the 1-hour writes were not read", resp.Usage)
				}
				r := srv.Requests()[i]
				bodies = append(bodies, r.Body)
				if want := slices.Repeat([]string{tc.want}, 4); !slices.Equal(r.CacheTTLs, want) {
					t.Errorf("call %d: cache marks %v, want %v", i, r.CacheTTLs, want)
				}
			}
			if v := srv.Violations(); len(v) > 0 {
				t.Fatalf("violations: %v", v)
			}
			for i := 1; i < len(bodies); i++ {
				if !bytes.Equal(bodies[i], bodies[0]) {
					t.Errorf("call %d's body differs from the first:\n%s\n%s", i, bodies[i], bodies[0])
				}
			}
			has := strings.Contains(string(bodies[0]), `"cache_control":{"type":"ephemeral","ttl":"1h"}`)
			if has != tc.wantTTL || tc.wantTTL == false && strings.Contains(string(bodies[0]), `"ttl"`) {
				t.Errorf("body's ttl members do not match the tier %q:\n%s", tc.ttl, bodies[0])
			}
		})
	}
}

// A request may name its own tier; one the API does not offer fails
// before it is sent.
func TestCacheTTLInvalidRefused(t *testing.T) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	p := anthropic.New(anthropic.Config{BaseURL: srv.AnthropicBaseURL(), APIKey: "k"})
	req := ttlRequest(nil)
	req.CacheTTL = "2h"
	if _, err := llm.Collect(p.Stream(context.Background(), req), nil); err == nil || !strings.Contains(err.Error(), "2h") {
		t.Fatalf("err = %v, want a refusal naming the tier", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}
