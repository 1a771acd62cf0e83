//go:build !unix

package agent

import "os"

// hostID is the host name: without a way to tell that a pid is gone
// (processGone), nothing more is needed.
func hostID() string {
	host, _ := os.Hostname()
	return host
}

// processGone cannot tell here; a holder is then only replaced when its
// lease expires.
func processGone(int) bool { return false }
