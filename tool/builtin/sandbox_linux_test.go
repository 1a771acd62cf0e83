//go:build linux

package builtin

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/tool/sandbox"
)

// policy returns a policy for root enforced by bubblewrap; without bwrap
// the test skips loudly, unless CI is set.
func policy(t testing.TB, root string, mode sandbox.Mode) *sandbox.Policy {
	t.Helper()
	m := sandbox.Detect(t.Context())
	if !m.Enforced() {
		if os.Getenv("CI") == "" {
			t.Skip("SKIPPING sandbox test: " + m.Why)
		}
		t.Fatal(m.Why)
	}
	return &sandbox.Policy{Mode: mode, Workspace: root, Mechanism: m}
}

func TestSandboxedShellAndFileTools(t *testing.T) {
	root, outside := testWS(t)
	ww := Options{Root: root, Sandbox: policy(t, root, sandbox.WorkspaceWrite)}
	ro := Options{Root: root, Sandbox: policy(t, root, sandbox.ReadOnly)}

	res := call(t, Shell(ww), map[string]any{"command": "echo in > in.txt; echo out > " + filepath.Join(outside, "out.txt") +
		"; echo out > /etc/talaria-sandbox-probe"})
	if readFileT(t, filepath.Join(root, "in.txt")) != "in\n" {
		t.Errorf("workspace-write could not write the workspace: %s", res.Content)
	}
	if _, err := os.Stat("/etc/talaria-sandbox-probe"); err == nil {
		_ = os.Remove("/etc/talaria-sandbox-probe")
		t.Errorf("workspace-write wrote /etc: %s", res.Content)
	}
	if _, err := os.Stat(filepath.Join(outside, "out.txt")); err == nil {
		t.Errorf("workspace-write wrote outside the workspace: %s", res.Content)
	}
	if !strings.Contains(res.Content, "denied by the sandbox (mode workspace-write)") {
		t.Errorf("the result does not say the sandbox denied the write: %s", res.Content)
	}

	res = call(t, Shell(ro), map[string]any{"command": "cat in.txt && echo x > ro.txt"})
	if _, err := os.Stat(filepath.Join(root, "ro.txt")); err == nil || !strings.Contains(res.Content, "in\n") {
		t.Errorf("read-only: want a read and no write: %s", res.Content)
	}
	for _, c := range []struct {
		tl   tool.Tool
		args map[string]any
	}{
		{WriteFile(ro), map[string]any{"path": "in.txt", "content": "new"}},
		{EditFile(ro), map[string]any{"path": "in.txt", "old_string": "in", "new_string": "new"}},
	} {
		tl := c.tl
		r := call(t, tl, c.args)
		if !r.IsError || !strings.Contains(r.Content, "refused by the sandbox") {
			t.Errorf("%s in read-only mode: %+v", tl.Info().Name, r)
		}
	}
	if readFileT(t, filepath.Join(root, "in.txt")) != "in\n" {
		t.Error("read-only mode changed in.txt")
	}
}

func TestShellReadOnlyCallNeedsEnforcement(t *testing.T) {
	root, _ := testWS(t)
	args := json.RawMessage(`{"command":"ls -la"}`)
	bad := json.RawMessage(`{"command":"ls; rm -rf x"}`)
	confined := Shell(Options{Root: root, Sandbox: policy(t, root, sandbox.WorkspaceWrite)}).(tool.CallReader)
	if !confined.ReadOnlyCall(args) || confined.ReadOnlyCall(bad) {
		t.Error("confined shell: ls should run without approval, ls; rm should not")
	}
	for _, opt := range []Options{{Root: root}, {Root: root, Sandbox: &sandbox.Policy{Mode: sandbox.Off}}} {
		if Shell(opt).(tool.CallReader).ReadOnlyCall(args) {
			t.Error("an unconfined shell let a command skip approval")
		}
	}
}

// TestShellLatencyFigures measures the added latency per shell call:
// the median of 100 calls of `true`, sandboxed and not, interleaved in one
// run. Figures for BENCHMARKS.md; run with TALARIA_SANDBOX_FIGURES=1.
func TestShellLatencyFigures(t *testing.T) {
	if os.Getenv("TALARIA_SANDBOX_FIGURES") == "" {
		t.Skip("figures only: set TALARIA_SANDBOX_FIGURES=1")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("no bwrap")
	}
	root, _ := testWS(t)
	off := Shell(Options{Root: root})
	bw := Shell(Options{Root: root, Sandbox: policy(t, root, sandbox.WorkspaceWrite)})
	var a, b []time.Duration
	for range 100 {
		for _, c := range []struct {
			tl  tool.Tool
			out *[]time.Duration
		}{{off, &a}, {bw, &b}} {
			start := time.Now()
			if r := call(t, c.tl, map[string]any{"command": "true"}); r.IsError {
				t.Fatal(r.Content)
			}
			*c.out = append(*c.out, time.Since(start))
		}
	}
	med := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	t.Logf("median of 100 calls of true: off %v, bubblewrap %v, added %v", med(a), med(b), med(b)-med(a))
}
