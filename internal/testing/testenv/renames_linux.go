package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// renameSyscalls are the numbers of rename(at)(2) as /proc/…/syscall shows
// them while a thread is stopped in one.
var renameSyscalls = map[string][]string{"amd64": {"82", "264", "316"}, "arm64": {"38", "276"}}

// HoldRenames makes every rename process pid does wait a minute — before
// it takes effect, or after it (exit) — with strace's syscall delay
// injection: a real stop inside the syscall write_file ends with, where a
// test kills the process. It returns the tracer once it traces every
// thread of pid. Kill the tracer after killing pid: a thread its tracer
// stopped is reaped only once the tracer is gone. Without strace the test
// skips, or fails under CI=true.
func HoldRenames(t testing.TB, pid int, exit bool) *os.Process {
	t.Helper()
	path, err := exec.LookPath("strace")
	if err != nil || renameSyscalls[runtime.GOARCH] == nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("strace is needed (on amd64 or arm64) to hold a process inside write_file: %v", err)
		}
		t.Skipf("SKIPPED: strace is needed (on amd64 or arm64) to hold a process inside write_file: %v", err)
	}
	when := "delay_enter"
	if exit {
		when = "delay_exit"
	}
	st := exec.Command(path, "-qq", "-f", "-p", strconv.Itoa(pid), "-o", "/dev/null",
		"-e", "trace=rename,renameat,renameat2", "-e", "inject=rename,renameat,renameat2:"+when+"=60000000")
	errb := &Buffer{}
	st.Stderr = errb
	if err := st.Start(); err != nil {
		t.Fatalf("strace: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = st.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = st.Process.Signal(syscall.SIGTERM) // detaches from a process still alive
		<-done
	})
	traced := func() bool {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
		for _, f := range tasks {
			b, err := os.ReadFile(f)
			if err != nil {
				continue // the thread ended
			}
			if strings.Contains(string(b), "\nTracerPid:\t0\n") {
				return false
			}
		}
		return len(tasks) > 0
	}
	if !Eventually(30*time.Second, func() bool {
		select {
		case <-done:
			return true
		default:
		}
		return traced()
	}) || !traced() {
		t.Fatalf("strace did not attach to process %d: %s", pid, errb)
	}
	return st.Process
}

// InRename reports whether a thread of process pid is stopped in a rename.
func InRename(pid int) bool {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/syscall", pid))
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		nr, _, _ := strings.Cut(string(b), " ")
		for _, want := range renameSyscalls[runtime.GOARCH] {
			if nr == want {
				return true
			}
		}
	}
	return false
}
