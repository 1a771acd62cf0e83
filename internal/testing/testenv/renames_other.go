//go:build !linux

package testenv

import (
	"os"
	"testing"
)

// HoldRenames needs Linux (strace, /proc): elsewhere the test skips.
func HoldRenames(t testing.TB, pid int, exit bool) *os.Process {
	t.Helper()
	t.Skip("SKIPPED: holding a process inside a rename needs Linux (strace and /proc)")
	return nil
}

// InRename needs Linux (/proc); elsewhere it reports false.
func InRename(pid int) bool { return false }
