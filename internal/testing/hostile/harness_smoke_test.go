//go:build unix

package hostile

import (
	"strings"
	"testing"
)

// TestHarness: the server starts, a principal's token works, no token is
// refused.
func TestHarness(t *testing.T) {
	s := startServe(t, options{Principals: []string{"alice"}})
	if code, body := s.do("GET", "v1/sessions", s.Tokens["alice"], ""); code != 200 {
		t.Fatalf("alice lists sessions: %d %s", code, body)
	}
	if code, _ := s.do("GET", "v1/sessions", "", ""); code != 401 {
		t.Fatalf("no token: %d, want 401", code)
	}
	if !strings.HasPrefix(s.Tokens["alice"], "tal_") {
		t.Fatalf("token %q", s.Tokens["alice"])
	}
}
