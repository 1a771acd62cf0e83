//go:build unix

package turn_test

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time so far: on a shared
// machine it is steadier than wall time, which counts other tenants' work.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
