//go:build unix

package crashtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
)

// mcpHome is a home whose config has the mcptest server as the stdio MCP
// server "t", and a session; notes is the server's directory.
func mcpHome(t *testing.T) (h *home, sid, notes string) {
	t.Helper()
	srvBin := filepath.Join(t.TempDir(), "mcptestserver")
	if out, err := exec.Command("go", "build", "-o", srvBin, "github.com/talaria-agent/talaria/internal/testing/mcptest/mcptestserver").CombinedOutput(); err != nil {
		t.Fatalf("build mcptestserver: %v\n%s", err, out)
	}
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	h = newHome(t, srv)
	notes = t.TempDir()
	cfg := "mcp_servers:\n  t:\n    command: " + srvBin + "\n    sandbox: {mode: off}\n    env: {MCPTEST_DIR: " + notes + "}\n"
	if err := os.WriteFile(filepath.Join(h.dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.Script(fakellm.Calls(fakellm.ToolCall("t__slow", `{"ms":60000}`)), fakellm.Text("never reached"))
	return h, h.newSession(), notes
}

// Ctrl+C while an MCP tool runs: the call is cancelled on the server (the
// SDK's notifications/cancelled), talaria exits 130, and the server's
// process is gone.
func TestRunCtrlCDuringMCPCall(t *testing.T) {
	h, sid, notes := mcpHome(t)
	p := h.start("run", "--session", sid, "--quiet", "--json", "wait")
	if !testenv.Eventually(30*time.Second, func() bool { return testenv.FileExists(notes, "started-1") }) {
		t.Fatalf("the MCP call never started; stderr:\n%s", p.stderr)
	}
	server := testenv.ReadPID(t, notes, "started-1")
	sent := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code := p.wait(t, 30*time.Second)
	took := time.Since(sent)
	t.Logf("talaria run exited %v after SIGINT", took.Round(time.Millisecond))
	if took > signalBound {
		t.Errorf("talaria run took %v to stop after Ctrl+C", took)
	}
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitInterrupted, p.stderr)
	}
	if !testenv.FileExists(notes, "cancelled-1") {
		t.Error("the server was not told to cancel the call")
	}
	if !testenv.Eventually(5*time.Second, func() bool { return testenv.ProcessGone(server) }) {
		t.Errorf("MCP server %d outlived talaria", server)
	}
	if n := len(h.rows(sid)); n != 3 {
		t.Errorf("%d rows, want user, call, interrupted result", n)
	}
}

// kill -9 of talaria during an MCP call: the server does not outlive it.
func TestKilledTalariaLeavesNoMCPServer(t *testing.T) {
	h, sid, notes := mcpHome(t)
	p := h.start("run", "--session", sid, "--quiet", "--json", "wait")
	if !testenv.Eventually(30*time.Second, func() bool { return testenv.FileExists(notes, "started-1") }) {
		t.Fatalf("the MCP call never started; stderr:\n%s", p.stderr)
	}
	server := testenv.ReadPID(t, notes, "started-1")
	_ = p.cmd.Process.Kill()
	p.wait(t, 30*time.Second)
	if !testenv.Eventually(5*time.Second, func() bool { return testenv.ProcessGone(server) }) {
		t.Errorf("MCP server %d outlived the killed talaria", server)
		_ = syscall.Kill(server, syscall.SIGKILL)
	}
}
