//go:build unix

package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// FileExists reports whether dir/name exists.
func FileExists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

// ReadPID reads a pid file a test's shell command wrote (echo $$ > f).
// The shell creates the file before it writes the number, so a reader that
// only waited for the file to exist can see it empty: poll until it parses.
func ReadPID(t testing.TB, dir, name string) int {
	t.Helper()
	path := filepath.Join(dir, name)
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				return pid
			} else if time.Now().After(deadline) {
				t.Fatalf("%s: %v", name, perr)
			}
		} else if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ProcessGone reports whether pid no longer runs. A zombie counts as gone:
// PID 1 in test containers often does not reap orphans.
func ProcessGone(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// Eventually polls ok until it holds or d has passed.
func Eventually(d time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if ok() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}
