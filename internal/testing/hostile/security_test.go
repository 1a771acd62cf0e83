//go:build unix

package hostile

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// A session's workspace is one the operator named; a path — the root, a
// climb out of the workspace, a host directory, another principal's named
// workspace — is refused with one generic answer that tells nothing about
// the host's file system.
func TestWorkspaceChosenByNameOnly(t *testing.T) {
	shared := t.TempDir()
	s := startServe(t, options{Principals: []string{"alice", "bob"},
		Config: fmt.Sprintf("serve:\n  workspaces:\n    shared:\n      path: %s\n      principals: [alice]\n", shared)})
	alice, bob := s.Tokens["alice"], s.Tokens["bob"]

	var first string
	for _, tc := range []struct{ token, ws string }{
		{alice, "/"}, {alice, "../"}, {alice, "/etc"}, {alice, "/no/such/dir"}, {alice, s.Home},
		{alice, shared}, {bob, "shared"}, {alice, "nosuch"},
	} {
		code, body := s.do("POST", "v1/sessions", tc.token, `{"workspace":`+quote(tc.ws)+`}`)
		if code != 400 {
			t.Fatalf("workspace %q: %d %s, want 400", tc.ws, code, body)
		}
		for _, leak := range []string{"no such file", "stat ", "not a directory", "/etc", s.Home, shared} {
			if strings.Contains(string(body), leak) {
				t.Errorf("workspace %q: the answer tells about the host (%q): %s", tc.ws, leak, body)
			}
		}
		if first == "" {
			first = string(body)
		} else if string(body) != first {
			t.Errorf("workspace %q answers differently from %q: %s vs %s", tc.ws, "/", body, first)
		}
	}
	code, body := s.do("POST", "v1/sessions", alice, `{"workspace":"shared"}`)
	if code != 201 || !strings.Contains(string(body), `"workspace":"shared"`) {
		t.Fatalf("alice's named workspace: %d %s", code, body)
	}
	if code, body := s.do("POST", "v1/sessions", bob, `{}`); code != 201 || !strings.Contains(string(body), `"workspace":"default"`) {
		t.Fatalf("the default workspace: %d %s", code, body)
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// Token names and principals must name someone, once: `serve token create
// ""` made principal "" that listed every tenant's sessions, and duplicate
// names were revoked together.
func TestTokenBlankAndDuplicateNamesRefused(t *testing.T) {
	s := startServe(t, options{Principals: []string{"alice"}})
	for _, args := range [][]string{
		{"serve", "token", "create", ""},
		{"serve", "token", "create", "   "},
		{"serve", "token", "create", "x", "--principal", " "},
		{"serve", "token", "create", "alice"},
	} {
		if out, err := s.cli(args...); err == nil {
			t.Errorf("%q was accepted: %s", args, out)
		}
	}
	out, err := s.cli("serve", "token", "list", "--json")
	if err != nil {
		t.Fatal(err, out)
	}
	var list []struct{ Name, Principal string }
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err, out)
	}
	if len(list) != 1 || list[0].Name != "alice" {
		t.Fatalf("tokens = %+v, want alice's only", list)
	}
}

// A configured token follows its configuration: when its secret changes
// the old one stops working, and a token removed from the configuration
// is revoked. A short secret is refused.
func TestConfigTokenRotationRevokesOldSecret(t *testing.T) {
	first, second := strings.Repeat("a", 40), strings.Repeat("b", 40)
	cfg := "serve:\n  tokens:\n    - name: ci\n      env: CI_TOKEN\n"
	s := startServe(t, options{Config: cfg, Env: []string{"CI_TOKEN=" + first}})
	if code, body := s.do("GET", "v1/sessions", first, ""); code != 200 {
		t.Fatalf("the configured token: %d %s", code, body)
	}
	s.stop()
	s = startServe(t, options{Home: s.Home, Config: cfg, Env: []string{"CI_TOKEN=" + second}})
	if code, _ := s.do("GET", "v1/sessions", first, ""); code != 401 {
		t.Errorf("the rotated-out secret still answers %d", code)
	}
	if code, body := s.do("GET", "v1/sessions", second, ""); code != 200 {
		t.Fatalf("the new secret: %d %s", code, body)
	}
	s.stop()
	s = startServe(t, options{Home: s.Home, Principals: []string{"alice"}})
	if code, _ := s.do("GET", "v1/sessions", second, ""); code != 401 {
		t.Errorf("a token removed from the config still answers %d", code)
	}

	// A one-character secret is a setup error, not a token.
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--api", "openai", "--base-url", s.Model.OpenAIBaseURL(), "--model", "m")
	cmd.Env = append(append([]string{}, s.env...), "CI_TOKEN=x")
	if err := os.WriteFile(filepath.Join(s.Home, "config.yaml"), []byte("database:\n  path: "+filepath.Join(s.Home, "state.db")+"\n"+cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	s.stop()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "at least 32") {
		t.Fatalf("serve with a 1-character configured secret: %v\n%s", err, out)
	}
}

// An open event stream of a token that is revoked ends within a heartbeat.
func TestRevokedTokenStreamCloses(t *testing.T) {
	s := startServe(t, options{Principals: []string{"alice"}, Config: "serve:\n  heartbeat: 1s\n"})
	tok := s.Tokens["alice"]
	sid := s.newSession(tok)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := s.request(ctx, "GET", "v1/sessions/"+sid+"/events", tok, "")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("events: %d", resp.StatusCode)
	}
	if out, err := s.cli("serve", "token", "revoke", "alice"); err != nil {
		t.Fatalf("revoke: %v %s", err, out)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
	}
	if ctx.Err() != nil {
		t.Fatal("the revoked token's stream stayed open")
	}
}

// Failed authentications are limited per client address (429 with
// Retry-After); the Bearer scheme is case-insensitive; /metrics is for
// admin tokens only.
func TestAuthRateLimitSchemeAndScopes(t *testing.T) {
	s := startServe(t, options{Principals: []string{"alice"}})
	req, _ := http.NewRequest("GET", s.URL+"v1/sessions", nil)
	req.Header.Set("Authorization", "bearer "+s.Tokens["alice"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("lower-case bearer scheme: %d", resp.StatusCode)
	}

	if code, _ := s.do("GET", "metrics", s.Tokens["alice"], ""); code != 403 {
		t.Errorf("/metrics with an ordinary token: %d, want 403", code)
	}
	if code, _ := s.do("GET", "metrics", s.admin(), ""); code != 200 {
		t.Errorf("/metrics with an admin token: %d, want 200", code)
	}

	limited := false
	for i := 0; i < 50 && !limited; i++ {
		resp, err := s.request(context.Background(), "GET", "v1/sessions", fmt.Sprintf("tal_guess%02d", i), "")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case 401:
		case 429:
			if resp.Header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
			limited = true
		default:
			t.Fatalf("guess %d: %d", i, resp.StatusCode)
		}
	}
	if !limited {
		t.Fatal("50 wrong tokens from one address were never rate limited")
	}
}

// A provider that echoes the request's Authorization header (and the key)
// in its error body puts the key nowhere: not in the event stream, the
// stored failure row, `sessions show`, or the --verbose log.
func TestProviderEchoedKeyRedacted(t *testing.T) {
	const key = "plainKEYvalue0123456789zzzz"
	echo := func(r fakellm.Request) fakellm.Step {
		return fakellm.RawError(400, `{"error":{"message":"bad request: you sent Authorization: `+r.Header.Get("Authorization")+` (key `+key+`) and sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123"}}`)
	}
	s := startServe(t, options{Principals: []string{"alice"}, Model: echo,
		Env: []string{"HOSTILE_KEY=" + key}, Args: []string{"--api-key-env", "HOSTILE_KEY", "--verbose"}})
	tok := s.Tokens["alice"]
	sid := s.newSession(tok)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := s.request(ctx, "GET", "v1/sessions/"+sid+"/events", tok, "")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if code, body := s.do("POST", "v1/sessions/"+sid+"/messages", tok, `{"text":"hi"}`); code != 202 {
		t.Fatalf("post: %d %s", code, body)
	}
	var stream strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		stream.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "event: turn_finished") {
			sc.Scan()
			stream.WriteString(sc.Text() + "\n")
			break
		}
	}
	if len(s.Model.Requests()) == 0 {
		t.Fatal("the model was never called")
	}
	_, rows := s.do("GET", "v1/sessions/"+sid+"/messages?all=true", tok, "")
	show, _ := s.cli("sessions", "show", sid)
	for where, text := range map[string]string{"the event stream": stream.String(), "the stored rows": string(rows),
		"sessions show": show, "the log": s.Stderr()} {
		for _, secret := range []string{key, "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds the secret %q:\n%s", where, secret, text)
			}
		}
	}
	if !strings.Contains(stream.String(), "bad request") {
		t.Errorf("the failure itself is not reported:\n%s", stream.String())
	}
}
