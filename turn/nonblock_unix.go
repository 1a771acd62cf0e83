//go:build unix

package turn

import "syscall"

// nonBlock opens without waiting for a FIFO's other end (FileHash).
const nonBlock = syscall.O_NONBLOCK
