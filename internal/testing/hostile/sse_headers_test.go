//go:build unix

package hostile

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// An idle session's event stream answers with its headers at once, not
// at the first event or the 15-second keep-alive ping: a client (or a
// proxy with a header timeout) knows the stream is open.
func TestSSEHeadersOnIdleSession(t *testing.T) {
	s := startServe(t, options{Principals: []string{"alice"}})
	tok := s.Tokens["alice"]
	sid := s.newSession(tok)
	// Well under the ping interval: headers held back until the ping
	// would miss this deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", s.URL+"v1/sessions/"+sid+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("no response headers before the deadline on an idle stream: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
