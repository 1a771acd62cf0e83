package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A probe cancelled while something it started still holds its output
// pipe returns instead of waiting for that process (chat's set-up is
// cancelled this way when the user quits during it).
func TestDetectCancelledProbeReturns(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Detect probes bwrap on Linux only")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	// A bwrap that leaves a child holding stdout, then hangs.
	script := "#!/bin/sh\nsleep 120 &\necho $! > " + pidFile + "\nexec sleep 120\n"
	if err := os.WriteFile(filepath.Join(dir, "bwrap"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	done := make(chan Mechanism, 1)
	go func() { done <- Detect(ctx) }()
	select {
	case m := <-done:
		if m.Name != "" || m.Why == "" {
			t.Fatalf("a cancelled probe reported %+v, want no mechanism and a reason", m)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Detect still waits for the probe's leftover child a minute after its context ended")
	}
}
