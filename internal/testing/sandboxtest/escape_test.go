//go:build linux

package sandboxtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/tool/sandbox"
)

// TestEnvironmentHasNoSecrets: in every mode, a command's environment is
// the allow-list: no provider key, token, TALARIA_* or OTEL_* variable.
func TestEnvironmentHasNoSecrets(t *testing.T) {
	for _, mode := range []string{"workspace-write", "read-only", "off"} {
		t.Run(mode, func(t *testing.T) {
			h := newHome(t)
			out := h.shell(mode, "env; cat /proc/1/environ 2>/dev/null | tr '\\0' '\\n'")
			for _, secret := range []string{"sk-secret-provider-key", "ghp-secret-token", "secret-otel", "TALARIA_HOME"} {
				if strings.Contains(out, secret) {
					t.Errorf("the command saw %q:\n%s", secret, out)
				}
			}
			if !strings.Contains(out, "PATH=") {
				t.Errorf("PATH is missing from the command's environment:\n%s", out)
			}
		})
	}
}

// TestReadOutsideIsHidden: ~/.ssh/id_rsa (by $HOME and by absolute path)
// and /etc/shadow are not readable; a file in the workspace is. Mode off
// reads the key, which shows the test can see an escape.
func TestReadOutsideIsHidden(t *testing.T) {
	h := newHome(t)
	if err := os.WriteFile(filepath.Join(h.ws, "notes.txt"), []byte("workspace-content\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(h.dir, ".ssh", "id_rsa")
	cmd := fmt.Sprintf("cat notes.txt; cat $HOME/.ssh/id_rsa; cat %s; cat /etc/shadow", key)
	out := h.shell("workspace-write", cmd)
	if strings.Contains(out, "PRIVATE-KEY-MATERIAL") {
		t.Errorf("the sandboxed command read the private key:\n%s", out)
	}
	if strings.Contains(out, "root:") {
		t.Errorf("the sandboxed command read /etc/shadow:\n%s", out)
	}
	if !strings.Contains(out, "workspace-content") {
		t.Errorf("the command could not read the workspace:\n%s", out)
	}
	if out := h.shell("off", "cat "+key); !strings.Contains(out, "PRIVATE-KEY-MATERIAL") {
		t.Errorf("mode off should read the key (the test's control):\n%s", out)
	}
}

// TestWriteOutsideFails: absolute paths, .., a symlink, /tmp and $HOME
// leave nothing outside the workspace; a write inside it lands.
func TestWriteOutsideFails(t *testing.T) {
	h := newHome(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(h.ws, "link")); err != nil {
		t.Fatal(err)
	}
	tmpName := "talaria-escape-" + filepath.Base(h.ws)
	cmd := strings.Join([]string{
		"echo x > " + filepath.Join(outside, "abs.txt"),
		"echo x > ../" + filepath.Base(h.ws) + "-dotdot.txt",
		"echo x > link/via-link.txt",
		"echo x > /tmp/" + tmpName,
		"echo x > $HOME/home.txt",
		"echo x > " + filepath.Join(h.dir, "talaria-home.txt"),
		"echo ok > inside.txt",
		"echo finished",
	}, "; ")
	out := h.shell("workspace-write", cmd)
	for _, p := range []string{
		filepath.Join(outside, "abs.txt"), filepath.Join(filepath.Dir(h.ws), filepath.Base(h.ws)+"-dotdot.txt"),
		filepath.Join(outside, "via-link.txt"), filepath.Join(os.TempDir(), tmpName), filepath.Join("/tmp", tmpName),
		filepath.Join(h.dir, "home.txt"), filepath.Join(h.dir, "talaria-home.txt"),
	} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the sandboxed command wrote %s:\n%s", p, out)
		}
	}
	if b, err := os.ReadFile(filepath.Join(h.ws, "inside.txt")); err != nil || string(b) != "ok\n" {
		t.Errorf("the write inside the workspace did not land (%v):\n%s", err, out)
	}
}

// TestNetworkOff: with the network off a command cannot connect to a port
// listening on this machine, and its result says the sandbox denied it;
// with sandbox.network: true it connects.
func TestNetworkOff(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil && os.Getenv("CI") == "" {
		t.Skip("SKIPPING: curl is not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			_, _ = c.Write([]byte("HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\nreached"))
			_ = c.Close()
		}
	}()
	cmd := "curl -sS --max-time 5 http://" + ln.Addr().String() + "/"
	h := newHome(t)
	out := h.shell("workspace-write", cmd)
	if len(accepted) > 0 || strings.Contains(out, "reached") {
		t.Fatalf("the sandboxed command reached the listening port:\n%s", out)
	}
	if !strings.Contains(out, "denied by the sandbox") {
		t.Errorf("the result does not say the sandbox denied the connection:\n%s", out)
	}
	h.config("sandbox:\n  network: true\n")
	if out := h.shell("workspace-write", cmd); !strings.Contains(out, "reached") {
		t.Errorf("with sandbox.network: true the command did not connect:\n%s", out)
	}
}

// TestNothingOutlivesTheCall: setsid, nohup and double-fork children end
// with the call, and a timeout kills them too and names what it killed.
func TestNothingOutlivesTheCall(t *testing.T) {
	h := newHome(t)
	out := h.shell("workspace-write", "setsid sleep 7101 >/dev/null 2>&1 & nohup sleep 7102 >/dev/null 2>&1 & (sleep 7103 >/dev/null 2>&1 &); echo started")
	if !strings.Contains(out, "started") {
		t.Fatalf("the command did not run:\n%s", out)
	}
	if !testenv.Eventually(20*time.Second, func() bool { return len(pidsWith("sleep 710")) == 0 }) {
		t.Errorf("background processes outlived the call: %v", pidsWith("sleep 710"))
	}
	r, _ := h.call("workspace-write", "shell", map[string]any{
		"command": "setsid sleep 7201 >/dev/null 2>&1 & (sleep 7202 >/dev/null 2>&1 &); sleep 7203", "timeout_seconds": 2})
	if !strings.Contains(r, "timed out") || !strings.Contains(r, "sleep (pid") {
		t.Errorf("the timeout result does not name what it killed:\n%s", r)
	}
	if !testenv.Eventually(20*time.Second, func() bool { return len(pidsWith("sleep 720")) == 0 }) {
		t.Errorf("processes outlived the timeout: %v", pidsWith("sleep 720"))
	}
}

// TestNothingOutlivesKill9: kill -9 of `talaria run` mid-command ends the
// command and everything it started; its delayed write never happens.
func TestNothingOutlivesKill9(t *testing.T) {
	h := newHome(t)
	h.srv.Script(fakellmShell(`setsid sh -c 'sleep 7301; echo late > after.txt' & sleep 7302; echo late > after2.txt`), textDone())
	cmd := h.command("go")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if !testenv.Eventually(30*time.Second, func() bool { return len(pidsWith("sleep 7302")) > 0 }) {
		_ = cmd.Process.Kill()
		t.Fatal("the command never started")
	}
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	<-done
	if !testenv.Eventually(20*time.Second, func() bool { return len(pidsWith("sleep 730")) == 0 }) {
		t.Errorf("processes outlived kill -9 of talaria: %v", pidsWith("sleep 730"))
		for _, p := range pidsWith("sleep 730") {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
			c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
			t.Logf("%s :: %.120s", b, c)
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
}

// TestReadOnlyMode: neither the shell nor write_file can write in
// read-only mode; reading works, and workspace-write writes.
func TestReadOnlyMode(t *testing.T) {
	h := newHome(t)
	if err := os.WriteFile(filepath.Join(h.ws, "a.txt"), []byte("readable\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := h.shell("read-only", "cat a.txt; echo x > b.txt")
	if _, err := os.Stat(filepath.Join(h.ws, "b.txt")); err == nil {
		t.Errorf("read-only mode let the shell write:\n%s", out)
	}
	if !strings.Contains(out, "readable") || !strings.Contains(out, "denied by the sandbox") {
		t.Errorf("read-only: want the file read and the write denied by the sandbox:\n%s", out)
	}
	r, _ := h.call("read-only", "write_file", map[string]any{"path": "c.txt", "content": "x"})
	if _, err := os.Stat(filepath.Join(h.ws, "c.txt")); err == nil || !strings.Contains(r, "refused by the sandbox") {
		t.Errorf("read-only mode let write_file write, or did not say why: %s", r)
	}
	h.call("workspace-write", "write_file", map[string]any{"path": "c.txt", "content": "x"})
	if _, err := os.Stat(filepath.Join(h.ws, "c.txt")); err != nil {
		t.Errorf("workspace-write: write_file did not write: %v", err)
	}
}

// TestLegitimateWork: building and running a program and git work in the
// workspace under the sandbox.
func TestLegitimateWork(t *testing.T) {
	h := newHome(t)
	cmd := "printf 'int main(void){return 0;}\\n' > m.c && cc -o m m.c && ./m && echo BUILT; " +
		"git init -q . && git status --short && echo GIT-OK"
	out := h.shell("workspace-write", cmd)
	if !strings.Contains(out, "BUILT") || !strings.Contains(out, "GIT-OK") {
		t.Errorf("legitimate work failed in the sandbox:\n%s", out)
	}
}

// TestModeReported: each mode is named at start, and by doctor.
func TestModeReported(t *testing.T) {
	for _, c := range []struct{ mode, start, doctor string }{
		{"workspace-write", "sandbox: workspace-write, network off, enforced by bubblewrap", "workspace-write"},
		{"read-only", "sandbox: read-only, network off, enforced by bubblewrap", "read-only"},
		{"off", "warning: sandbox off", "off"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			h := newHome(t)
			h.config("sandbox:\n  mode: " + c.mode + "\n")
			_, stderr := h.call("", "list_dir", map[string]any{})
			if !strings.Contains(stderr, c.start) {
				t.Errorf("start did not say %q:\n%s", c.start, stderr)
			}
			d := exec.Command(bin, "doctor")
			d.Env, d.Dir = h.env, h.ws
			out, _ := d.CombinedOutput()
			line := ""
			for _, l := range strings.Split(string(out), "\n") {
				if strings.Contains(l, "sandbox:") {
					line = l
				}
			}
			if !strings.Contains(line, c.doctor) {
				t.Errorf("doctor's sandbox line %q does not name %s:\n%s", line, c.doctor, out)
			}
		})
	}
}

// TestForkBombBounded: a fork bomb stays under the pids cgroup's bound and
// nothing of it is left after the call.
func TestForkBombBounded(t *testing.T) {
	g, ok := sandbox.NewGroup(1)
	if !ok {
		t.Skip("SKIPPING the fork bomb test: no pids cgroup can be made here (needs root or a delegated cgroup)")
	}
	_ = g.Remove()
	h := newHome(t)
	const marker = "bomb7401"
	peak := 0
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				peak = max(peak, len(pidsWith(marker)))
			}
		}
	}()
	r, _ := h.call("workspace-write", "shell", map[string]any{
		"command": ": " + marker + "; f(){ f | f & }; f; sleep 60", "timeout_seconds": 4})
	close(stop)
	<-watched
	if !strings.Contains(r, "timed out") {
		t.Errorf("the fork bomb's call did not time out: %s", r)
	}
	if peak > 600 {
		t.Errorf("the fork bomb reached %d processes; the bound is 512", peak)
	}
	if !testenv.Eventually(20*time.Second, func() bool { return len(pidsWith(marker)) == 0 }) {
		t.Errorf("%d fork bomb processes outlived the call", len(pidsWith(marker)))
	}
}

// TestMCPServerConfined: a stdio MCP server runs in its own sandbox
// (default workspace-write): it writes in the workspace, not outside.
func TestMCPServerConfined(t *testing.T) {
	h := newHome(t)
	srvBin := filepath.Join(h.ws, "mcptestserver")
	if out, err := exec.Command("go", "build", "-o", srvBin, "github.com/talaria-agent/talaria/internal/testing/mcptest/mcptestserver").CombinedOutput(); err != nil {
		t.Fatalf("build mcptestserver: %v\n%s", err, out)
	}
	inside, outside := filepath.Join(h.ws, "notes"), t.TempDir()
	if err := os.Mkdir(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	h.config("mcp_servers:\n" +
		"  in:\n    command: " + srvBin + "\n    env: {MCPTEST_DIR: " + inside + "}\n" +
		"  out:\n    command: " + srvBin + "\n    env: {MCPTEST_DIR: " + outside + "}\n")
	r, stderr := h.call("", "in__write_note", map[string]any{"name": "a.txt", "text": "hello"})
	if _, err := os.Stat(filepath.Join(inside, "note-a.txt")); err != nil {
		t.Errorf("the confined server could not write in the workspace (%v): %s\n%s", err, r, stderr)
	}
	r, _ = h.call("", "out__write_note", map[string]any{"name": "b.txt", "text": "hello"})
	if _, err := os.Stat(filepath.Join(outside, "note-b.txt")); err == nil {
		t.Errorf("the confined server wrote outside the workspace: %s", r)
	}
}
