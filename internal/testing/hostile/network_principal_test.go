//go:build linux

package hostile

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A principal's serve.limits.*.network narrows the server's host list for
// its commands: with the server allowing hosts A and B, alice (the
// server's list) reaches both, eve (network: [A]) reaches A only and gets
// the sandbox's refusal for B, and mallory (network: false) reaches
// neither; a principal listing a host the server does not allow stops
// serve at start with a line that names it.
func TestPrincipalNetworkHosts(t *testing.T) {
	needBwrap(t)
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") != "true" {
			t.Skip("SKIPPING the per-principal network test: curl is not installed")
		}
		t.Fatal("curl is not installed")
	}
	var hitsA, hitsB atomic.Int32
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hitsA.Add(1)
		fmt.Fprint(w, "reached-A")
	}))
	defer a.Close()
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hitsB.Add(1)
		fmt.Fprint(w, "reached-B")
	}))
	defer b.Close()
	hostA, hostB := mustHost(t, a.URL), mustHost(t, b.URL)

	var results sync.Map
	s := startServe(t, options{Principals: []string{"alice", "eve", "mallory"}, Model: toolModel(&results),
		Args: []string{"--yes"},
		Config: fmt.Sprintf("sandbox:\n  mode: workspace-write\n  network: [%q, %q]\nserve:\n  limits:\n    principals:\n"+
			"      eve:\n        network: [%q]\n      mallory:\n        network: false\n", hostA, hostB, hostA)})
	cases := []struct {
		principal string
		wantA     bool
		wantB     bool
	}{
		{"alice", true, true},
		{"eve", true, false},
		{"mallory", false, false},
	}
	for _, c := range cases {
		t.Run(c.principal, func(t *testing.T) {
			beforeA, beforeB := hitsA.Load(), hitsB.Load()
			cmd := "curl -sS --max-time 10 " + a.URL + "/x; echo; curl -sS --max-time 10 " + b.URL + "/y; echo; echo PROXY=${http_proxy-none}"
			text := toolText("shell", map[string]string{"command": cmd + " # " + c.principal})
			tok := s.Tokens[c.principal]
			s.finished(tok, s.newSession(tok), text)
			v, _ := results.Load(text)
			r := fmt.Sprint(v)
			gotA, gotB := hitsA.Load() > beforeA, hitsB.Load() > beforeB
			if gotA != c.wantA || gotB != c.wantB {
				t.Errorf("%s reached A=%v B=%v, want A=%v B=%v; result:\n%s", c.principal, gotA, gotB, c.wantA, c.wantB, r)
			}
			if c.principal == "eve" && !strings.Contains(r, "refused by the sandbox") {
				t.Errorf("eve's refused request does not carry the sandbox's refusal:\n%s", r)
			}
			if c.principal == "mallory" && !strings.Contains(r, "PROXY=none") {
				t.Errorf("mallory's command was given a proxy although its network is off:\n%s", r)
			}
		})
	}

	t.Run("wider list refused at start", func(t *testing.T) {
		home := t.TempDir()
		cfg := fmt.Sprintf("database:\n  path: %s\nsandbox:\n  mode: workspace-write\n  network: [%q]\nserve:\n  limits:\n    principals:\n"+
			"      bob:\n        network: [%q]\n", filepath.Join(home, "state.db"), hostA, hostB)
		if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		// A serve that wrongly starts would run until killed: bound it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "serve", "--addr", "127.0.0.1:0", "--api", "openai", "--base-url", s.Model.OpenAIBaseURL(),
			"--model", "m", "--workspace", t.TempDir())
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TALARIA_HOME=" + home, "TMPDIR=" + os.TempDir()}
		out, err := cmd.CombinedOutput()
		if err == nil || ctx.Err() != nil {
			t.Fatalf("serve started with a principal's host list wider than the server's:\n%s", out)
		}
		if !strings.Contains(string(out), "bob") || !strings.Contains(string(out), hostB) {
			t.Errorf("the refusal does not name the principal and the host:\n%s", out)
		}
	})
}

func mustHost(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}
