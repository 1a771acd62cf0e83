//go:build linux

package hostile

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
)

// needBwrap skips loudly without bubblewrap, unless CI is set: CI installs
// it (.ci/run) and must run these tests.
func needBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("SKIPPING the serve sandbox tests: bubblewrap (bwrap) is not installed")
		}
		t.Fatal("bwrap is not installed; CI must install bubblewrap")
	}
}

// toolModel answers a user text "TOOL JSON-ARGS" with that one tool call,
// then "done" once the result is back; results[text] is the tool's result.
func toolModel(results *sync.Map) func(fakellm.Request) fakellm.Step {
	return func(r fakellm.Request) fakellm.Step {
		user := lastUser(r)
		if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
			results.Store(user, last.Text)
			return fakellm.Text("done")
		}
		name, args, _ := strings.Cut(user, " ")
		return fakellm.Calls(fakellm.ToolCall(name, args))
	}
}

func toolText(name string, args map[string]string) string {
	b, _ := json.Marshal(args)
	return name + " " + string(b)
}

// A principal whose sandbox is read-only (serve.limits.principals.eve)
// writes nothing with the shell or write_file in the server's workspace,
// while alice, on the server's workspace-write, writes both; a principal
// asking for a wider mode than the server's (mallory: off) gets the
// server's.
func TestPrincipalSandboxMode(t *testing.T) {
	needBwrap(t)
	var results sync.Map
	s := startServe(t, options{Principals: []string{"alice", "eve", "mallory"}, Model: toolModel(&results),
		Args: []string{"--yes"},
		Config: "sandbox:\n  mode: workspace-write\nserve:\n  limits:\n    principals:\n" +
			"      eve:\n        sandbox: read-only\n      mallory:\n        sandbox: off\n"})
	cases := []struct {
		principal string
		tool      string
		args      map[string]string
		file      string
		writes    bool
	}{
		{"eve", "shell", map[string]string{"command": "echo x > eve-shell.txt"}, "eve-shell.txt", false},
		{"eve", "write_file", map[string]string{"path": "eve-write.txt", "content": "x"}, "eve-write.txt", false},
		{"alice", "shell", map[string]string{"command": "echo x > alice-shell.txt"}, "alice-shell.txt", true},
		{"alice", "write_file", map[string]string{"path": "alice-write.txt", "content": "x"}, "alice-write.txt", true},
		// off is wider than the server's workspace-write: still confined.
		{"mallory", "shell", map[string]string{"command": "echo x > " + filepath.Join(s.Home, "mallory.txt")}, "", false},
	}
	for _, c := range cases {
		t.Run(c.principal+"/"+c.tool, func(t *testing.T) {
			tok := s.Tokens[c.principal]
			text := toolText(c.tool, c.args)
			s.finished(tok, s.newSession(tok), text)
			r, _ := results.Load(text)
			path := filepath.Join(s.WS, c.file)
			if c.file == "" {
				path = filepath.Join(s.Home, "mallory.txt")
			}
			_, err := os.Stat(path)
			if wrote := err == nil; wrote != c.writes {
				t.Errorf("%s via %s: wrote=%v, want %v; result: %v", c.principal, c.tool, wrote, c.writes, r)
			}
			// (mallory's target is hidden, not denied: no sandbox wording.)
			if !c.writes && c.file != "" && !strings.Contains(fmt.Sprint(r), "sandbox") {
				t.Errorf("%s via %s: the result does not say the sandbox refused: %v", c.principal, c.tool, r)
			}
		})
	}
}

// kill -9 of `talaria serve` mid-command ends the command and everything
// it started (a setsid child too); neither delayed write happens.
func TestNothingOutlivesServeKill9(t *testing.T) {
	needBwrap(t)
	// A marker of this run only, so -count=N runs never see each other's.
	mark := fmt.Sprintf("sleep 7%04d", time.Now().UnixNano()%10000)
	var results sync.Map
	s := startServe(t, options{Principals: []string{"alice"}, Model: toolModel(&results), Args: []string{"--yes"},
		Config: "sandbox:\n  mode: workspace-write\n"})
	tok := s.Tokens["alice"]
	sid := s.newSession(tok)
	cmd := fmt.Sprintf(`setsid sh -c '%s1; echo late > after.txt' & %s2; echo late > after2.txt`, mark, mark)
	body, _ := json.Marshal(map[string]string{"text": toolText("shell", map[string]string{"command": cmd})})
	if code, b := s.do("POST", "v1/sessions/"+sid+"/messages", tok, string(body)); code != 202 {
		t.Fatalf("post: %d %s", code, b)
	}
	if !testenv.Eventually(30*time.Second, func() bool { return len(testenv.PIDsWith(mark+"2")) > 0 }) {
		t.Fatalf("the command never started; serve:\n%s", s.Stderr())
	}
	_ = syscall.Kill(s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
	if !testenv.Eventually(20*time.Second, func() bool { return len(testenv.PIDsWith(mark)) == 0 }) {
		left := testenv.PIDsWith(mark)
		for _, p := range left {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		t.Fatalf("processes outlived kill -9 of talaria serve: %v", left)
	}
	for _, f := range []string{"after.txt", "after2.txt"} {
		if testenv.FileExists(s.WS, f) {
			t.Errorf("%s was written after serve died", f)
		}
	}
}
