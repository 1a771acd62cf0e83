//go:build linux

package builtin

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// processTree lists the command's process and its descendants as
// "name (pid N)", read from /proc before they are killed, so a timeout
// message can say what it killed.
func processTree(cmd *exec.Cmd) []string {
	if cmd.Process == nil {
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	name := map[int]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		parent[pid], name[pid] = ppid, s[open+1:end]
	}
	root := cmd.Process.Pid
	var out []string
	for pid := range parent {
		for p, n := pid, 0; p > 1 && n < 64; p, n = parent[p], n+1 {
			if p == root {
				out = append(out, fmt.Sprintf("%s (pid %d)", name[pid], pid))
				break
			}
		}
	}
	return out
}
