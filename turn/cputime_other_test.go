//go:build !unix

package turn_test

import "time"

// cpuTime is not measured here; the benchmark then reports 0 CPU.
func cpuTime() time.Duration { return 0 }
