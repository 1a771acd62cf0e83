//go:build unix

package agent

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// hostID names the machine and, where it can be read (Linux), the PID
// namespace: pids mean the same process only between processes that share
// both, so two containers with one host name never judge each other's
// pids. Empty when the host name is unknown.
func hostID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return ""
	}
	// The link reads "pid:[4026531836]".
	if ns, err := os.Readlink("/proc/self/ns/pid"); err == nil {
		if i := strings.IndexByte(ns, '['); i >= 0 {
			return host + "/" + strings.Trim(ns[i:], "[]")
		}
	}
	return host
}

// processGone reports whether no process with this pid exists. A zombie (a
// killed child its parent has not reaped yet) counts as gone: it runs no
// code and holds no lease in any useful sense.
func processGone(pid int) bool {
	err := syscall.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return true
	}
	if err != nil {
		return false // EPERM: it exists, owned by someone else
	}
	return zombie(pid)
}

// zombie reads the process state from /proc where there is one (Linux);
// elsewhere it answers false.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain spaces or parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] == 'Z'
}
