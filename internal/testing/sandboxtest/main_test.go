//go:build linux

package sandboxtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
)

// bin is the talaria binary TestMain built.
var bin string

func TestMain(m *testing.M) {
	testenv.MainWithBuild(m, testenv.Talaria, &bin)
}

// needBwrap skips loudly without bubblewrap, unless CI is set: CI installs
// it (.ci/run) and must run the suite.
func needBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("SKIPPING the sandbox escape suite: bubblewrap (bwrap) is not installed")
		}
		t.Fatal("bwrap is not installed; CI must install bubblewrap")
	}
}

// home is one run's world: a TALARIA_HOME that doubles as HOME (with a
// fake ~/.ssh/id_rsa in it), a workspace, and the scripted model server.
type home struct {
	t   *testing.T
	dir string // HOME and TALARIA_HOME
	ws  string
	srv *fakellm.Server
	env []string
}

func newHome(t *testing.T) *home {
	t.Helper()
	needBwrap(t)
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	h := &home{t: t, dir: t.TempDir(), ws: t.TempDir(), srv: srv}
	if err := os.MkdirAll(filepath.Join(h.dir, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.dir, ".ssh", "id_rsa"), []byte("PRIVATE-KEY-MATERIAL\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + h.dir,
		"TMPDIR=" + os.TempDir(),
		"TALARIA_HOME=" + h.dir,
		"OPENAI_API_KEY=sk-secret-provider-key",
		"GITHUB_TOKEN=ghp-secret-token",
		"OTEL_EXPORTER_OTLP_HEADERS=authorization=secret-otel",
	}
	return h
}

// config writes config.yaml into TALARIA_HOME.
func (h *home) config(yaml string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, "config.yaml"), []byte(yaml), 0o600); err != nil {
		h.t.Fatal(err)
	}
}

func (h *home) command(args ...string) *exec.Cmd {
	all := append([]string{"run", "--api", "openai", "--base-url", h.srv.OpenAIBaseURL(), "--model", "m",
		"--workspace", h.ws, "--yes"}, args...)
	cmd := exec.Command(bin, all...)
	cmd.Env = h.env
	cmd.Dir = h.ws
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// call runs `talaria run` with one scripted call of tool name with args,
// and returns the tool's result text and talaria's stderr.
func (h *home) call(sandboxMode, name string, args any) (result, stderr string) {
	h.t.Helper()
	b, _ := json.Marshal(args)
	h.srv.Script(fakellm.Calls(fakellm.ToolCall(name, string(b))), fakellm.Text("done"))
	var extra []string
	if sandboxMode != "" {
		extra = append(extra, "--sandbox", sandboxMode)
	}
	cmd := h.command(append(extra, "go")...)
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		h.t.Fatalf("talaria run: %v\nstderr:\n%s", err, errb.String())
	}
	reqs := h.srv.Requests()
	last := reqs[len(reqs)-1]
	for i := len(last.Messages) - 1; i >= 0; i-- {
		if last.Messages[i].Role == "tool" {
			return last.Messages[i].Text, errb.String()
		}
	}
	h.t.Fatalf("no tool result in the last request; stderr:\n%s", errb.String())
	return "", ""
}

// shell runs one scripted shell command.
func (h *home) shell(sandboxMode, command string) string {
	h.t.Helper()
	r, _ := h.call(sandboxMode, "shell", map[string]any{"command": command})
	return r
}

// pidsWith lists the processes whose command line contains marker: PIDs a
// command writes are its namespace's, not ours.
func pidsWith(marker string) []int { return testenv.PIDsWith(marker) }

func fakellmShell(command string) fakellm.Step {
	b, _ := json.Marshal(map[string]string{"command": command})
	return fakellm.Calls(fakellm.ToolCall("shell", string(b)))
}

func textDone() fakellm.Step { return fakellm.Text("done") }
