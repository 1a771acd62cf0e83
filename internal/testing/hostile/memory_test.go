//go:build unix

package hostile

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// memoryModel stores the prompt's text after "remember:" with the memory
// tool and otherwise answers "ok".
func memoryModel(req fakellm.Request) fakellm.Step {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == "user" {
		if fact, ok := strings.CutPrefix(last.Text, "remember: "); ok {
			args, _ := json.Marshal(map[string]string{"action": "add", "text": fact})
			return fakellm.Calls(fakellm.ToolCall("memory", string(args)))
		}
	}
	return fakellm.Text("ok")
}

// newSession creates a session as token's principal and returns its id.
func (s *server) newSession(token string) string {
	s.t.Helper()
	code, body := s.do("POST", "v1/sessions", token, "")
	if code != 201 {
		s.t.Fatalf("create session: %d %s", code, body)
	}
	var v struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.ID == "" {
		s.t.Fatalf("create session: %s", body)
	}
	return v.ID
}

// turn posts text and follows the turn's event stream to its end; each
// approval_required is answered with decide(name, arguments). It returns
// the event names seen.
func (s *server) turn(token, sid, text string, decide func(name, args string) string) []string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	body, _ := json.Marshal(map[string]string{"text": text})
	req, err := http.NewRequestWithContext(ctx, "POST", s.URL+"v1/sessions/"+sid+"/messages", strings.NewReader(string(body)))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("post message: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		s.t.Fatalf("post message: %d", resp.StatusCode)
	}
	turnID := resp.Header.Get("X-Turn-ID")
	var events []string
	event := ""
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
			events = append(events, event)
		case strings.HasPrefix(line, "data: ") && event == "approval_required":
			var d struct {
				CallID    string `json:"call_id"`
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				s.t.Fatalf("approval_required data: %v: %s", err, line)
			}
			verdict := decide(d.Name, d.Arguments)
			if code, b := s.do("POST", "v1/turns/"+turnID+"/approvals/"+d.CallID, token, `{"decision":"`+verdict+`"}`); code != 200 {
				s.t.Fatalf("approve: %d %s", code, b)
			}
		}
	}
	return events
}

// In serve, a memory write goes through the approval flow (showing what
// would be stored), and memory is the principal's: what alice's sessions
// keep never reaches bob's system prompt, while alice's next session sees
// it.
func TestServeMemoryIsPerPrincipalAndApproved(t *testing.T) {
	s := startServe(t, options{Principals: []string{"alice", "bob"}, Model: memoryModel})
	alice, bob := s.Tokens["alice"], s.Tokens["bob"]

	var asked []string
	deny := func(name, args string) string { asked = append(asked, name+" "+args); return "deny" }
	ev := s.turn(alice, s.newSession(alice), "remember: alice-denied-fact", deny)
	if len(asked) != 1 || !strings.Contains(asked[0], "alice-denied-fact") {
		t.Fatalf("the memory write was not put up for approval with its text: %q (events %q)", asked, ev)
	}

	allow := func(name, args string) string { return "allow" }
	s.turn(alice, s.newSession(alice), "remember: alice-secret-fact", allow)

	systemOf := func(token string) string {
		sid := s.newSession(token)
		n := len(s.Model.Requests())
		s.turn(token, sid, "hello", allow)
		reqs := s.Model.Requests()
		if len(reqs) <= n {
			t.Fatalf("no model request for the new session")
		}
		return reqs[len(reqs)-1].System
	}
	if sys := systemOf(bob); strings.Contains(sys, "alice-secret-fact") {
		t.Errorf("alice's memory reached bob's system prompt:\n%s", sys)
	}
	sys := systemOf(alice)
	if !strings.Contains(sys, "alice-secret-fact") {
		t.Errorf("alice's approved memory is missing from her next session's prompt:\n%s", sys)
	}
	if strings.Contains(sys, "alice-denied-fact") {
		t.Errorf("a denied memory write was stored:\n%s", sys)
	}
}
