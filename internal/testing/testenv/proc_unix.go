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

// PIDWritten reports whether the pid file dir/name holds its number yet.
// The shell creates the file before it writes the number: a test that
// interrupts a command once its pid files merely exist may kill it before
// they are written, and then has no pid to check.
func PIDWritten(dir, name string) bool {
	_, err := parsePID(filepath.Join(dir, name))
	return err == nil
}

func parsePID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// ReadPID reads a pid file a test's shell command wrote (echo $$ > f),
// polling until it parses (see PIDWritten).
func ReadPID(t testing.TB, dir, name string) int {
	t.Helper()
	path := filepath.Join(dir, name)
	deadline := time.Now().Add(10 * time.Second)
	for {
		pid, err := parsePID(path)
		if err == nil {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", name, err)
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

// PIDsWith lists the processes whose command line (/proc/PID/cmdline, its
// NULs as spaces) contains substr, leaving out the caller. A command run in
// a PID namespace (the sandbox) knows only its namespace's PIDs, so tests
// find what it started by a marker in the command line instead.
func PIDsWith(substr string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), substr) {
			out = append(out, pid)
		}
	}
	return out
}
