//go:build unix

package main

import (
	"os"
	"runtime"
	"syscall"
	"time"
)

// usage is the CPU time and peak RSS of a finished process. The kernel
// reports the child's own use plus that of the children it reaped (its
// tool processes), as /usr/bin/time does.
func usage(ps *os.ProcessState) (user, sys time.Duration, maxRSS int64) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return ps.UserTime(), ps.SystemTime(), 0
	}
	maxRSS = int64(ru.Maxrss)
	if runtime.GOOS != "darwin" {
		maxRSS *= 1024 // kilobytes everywhere but macOS
	}
	return ps.UserTime(), ps.SystemTime(), maxRSS
}
