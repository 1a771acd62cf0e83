package agent

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// defaultHolder names this process in turn leases: host:pid:random, host
// being hostID. The host and pid let another process on the same host see
// that a holder was killed (holderGone); the random part keeps two agents
// of one process apart.
func defaultHolder() string {
	return fmt.Sprintf("%s:%d:%s", hostID(), os.Getpid(), randomHex(3))
}

// holderGone reports whether holder, a lease holder name in defaultHolder's
// form, is a process on this host that no longer runs — a talaria killed
// with SIGKILL or by a crash, whose lease would otherwise block the session
// until it expires. Any doubt (another host, another naming scheme, a
// process that exists) answers false: breaking a live holder's lease is
// far worse than waiting for an expiry.
func holderGone(holder string) bool {
	host, pid, ok := parseHolder(holder)
	if !ok || pid == os.Getpid() {
		return false
	}
	if me := hostID(); me == "" || host != me {
		return false
	}
	return processGone(pid)
}

// parseHolder splits "host:pid:random".
func parseHolder(holder string) (host string, pid int, ok bool) {
	parts := strings.Split(holder, ":")
	if len(parts) < 3 {
		return "", 0, false
	}
	n := len(parts)
	pid, err := strconv.Atoi(parts[n-2])
	if err != nil || pid <= 0 {
		return "", 0, false
	}
	return strings.Join(parts[:n-2], ":"), pid, true
}
