//go:build unix

package sqlite

import (
	"os"
	"path/filepath"
	"syscall"
)

// writable reports whether path (or, when it does not exist, its directory)
// can be written by this process.
func writable(path string) bool {
	target := path
	if _, err := os.Stat(path); err != nil {
		target = filepath.Dir(path)
	}
	const wOK = 2 // access(2) W_OK
	return syscall.Access(target, wOK) == nil
}
