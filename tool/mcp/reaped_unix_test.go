//go:build unix

package mcp_test

import (
	"syscall"
	"time"

	"github.com/talaria-agent/talaria/internal/testing/testenv"
)

// reaped reports whether pid, a server this test process started, is gone
// for good: not running and not a zombie, since the manager, its parent,
// must have waited for it. (testenv.ProcessGone counts zombies as gone,
// which suits grandchildren that init reaps, not our own children.)
func reaped(pid int) bool {
	return testenv.Eventually(5*time.Second, func() bool { return syscall.Kill(pid, 0) == syscall.ESRCH })
}
