//go:build linux

package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pidsRoots are where a pids controller may be mounted: cgroup v2 (when
// it offers pids) and v1.
var pidsRoots = []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/pids"}

// Group is a pids cgroup holding one command and everything it starts: it
// bounds how many processes they may have (a fork bomb stops there) and
// finds every one of them to kill, setsid'd or not.
type Group struct {
	dir string
}

// NewGroup creates a pids cgroup allowing max processes, where this
// process may create one (root, or a delegated cgroup); ok is false
// otherwise. Remove it when the command is over.
func NewGroup(max int) (g *Group, ok bool) {
	for _, root := range pidsRoots {
		if !hasPids(root) {
			continue
		}
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		dir := filepath.Join(root, "talaria-"+strconv.Itoa(os.Getpid())+"-"+hex.EncodeToString(b))
		if os.Mkdir(dir, 0o755) != nil {
			continue
		}
		if os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0o644) != nil {
			_ = os.Remove(dir)
			continue
		}
		return &Group{dir: dir}, true
	}
	return nil, false
}

func hasPids(root string) bool {
	if root == "/sys/fs/cgroup/pids" {
		_, err := os.Stat(filepath.Join(root, "cgroup.procs"))
		return err == nil
	}
	b, err := os.ReadFile(filepath.Join(root, "cgroup.subtree_control"))
	return err == nil && strings.Contains(" "+string(b)+" ", " pids")
}

// Wrap returns argv prefixed so the command joins the group before it
// runs: nothing it starts can be outside. The command's fd 3 must be the
// read end of a pipe whose write end only Talaria holds (lifeline): a
// watcher in the group waits for its end of file — Talaria gone, however
// it died, or the call over — and then kills every process in the group.
// A parent-death signal alone is not enough: bubblewrap run as root can
// lose it when it changes its credentials.
func (g *Group) Wrap(argv []string) []string {
	// The watcher uses shell builtins only (read, kill, test): once the
	// group is at pids.max it could not fork a cat. It skips its own pid
	// (read from /proc/self/stat: $$ is the parent's) and loops until it
	// is alone, because cgroup.procs may list it before processes started
	// later, and one pass would end with it killing itself first.
	const script = `echo $$ > "$0/cgroup.procs" || exit 125
(exec >/dev/null 2>&1 </dev/null; read -r _ <&3; read -r me _ </proc/self/stat
i=0; while [ "$i" -lt 1000 ]; do i=$((i+1)); left=0
while read -r p; do [ "$p" = "$me" ] && continue; left=1; kill -9 "$p"; done <"$0/cgroup.procs"
[ "$left" = 0 ] && break; done) &
exec 3<&- "$@"`
	return append([]string{"/bin/sh", "-c", script, g.dir}, argv...)
}

// Kill kills every process in the group until it is empty (or 2s pass).
func (g *Group) Kill() {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		pids := g.pids()
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (g *Group) pids() []int {
	b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// ReapOrphans kills the processes of groups whose Talaria process is gone
// (killed before it could clean up) and removes those groups; it returns
// how many processes it killed.
func ReapOrphans() int {
	n := 0
	for _, root := range pidsRoots {
		dirs, _ := filepath.Glob(filepath.Join(root, "talaria-*-*"))
		for _, d := range dirs {
			f := strings.Split(filepath.Base(d), "-")
			pid, err := strconv.Atoi(f[1])
			if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
				continue // its Talaria still runs (or a PID reused: left alone, safe side)
			}
			g := &Group{dir: d}
			n += len(g.pids())
			_ = g.Remove()
		}
	}
	return n
}

// Remove kills what is left and removes the group's directory.
func (g *Group) Remove() error {
	g.Kill()
	var err error
	for range 50 {
		if err = os.Remove(g.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}
