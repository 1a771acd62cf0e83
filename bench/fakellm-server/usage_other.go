//go:build !unix

package main

import (
	"os"
	"time"
)

// usage is the CPU time of a finished process; peak RSS is not reported here.
func usage(ps *os.ProcessState) (user, sys time.Duration, maxRSS int64) {
	return ps.UserTime(), ps.SystemTime(), 0
}
