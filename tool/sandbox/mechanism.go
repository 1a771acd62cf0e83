package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Mechanism is what enforces a policy on this machine.
type Mechanism struct {
	// Name is "bubblewrap", or "" when nothing can enforce a policy.
	Name string
	// Path is the bwrap binary.
	Path string
	// Why says, when Name is "", why nothing is available.
	Why string
}

// Bubblewrap names the bubblewrap mechanism.
const Bubblewrap = "bubblewrap"

// Enforced reports whether the mechanism confines anything.
func (m Mechanism) Enforced() bool { return m.Name != "" }

// Describe names the mechanism for people.
func (m Mechanism) Describe() string {
	if !m.Enforced() {
		return "nothing (" + m.Why + ")"
	}
	return m.Name + " (" + m.Path + ")"
}

// ErrUnenforced is returned when a confined mode is asked for and nothing
// on this machine can enforce it.
var ErrUnenforced = errors.New("sandbox cannot be enforced here")

// Detect finds what can enforce a policy here: bubblewrap on Linux when it
// is installed and can create its namespaces (it needs user namespaces,
// which some kernels and containers turn off). It runs bwrap once, so call
// it once per process.
func Detect(ctx context.Context) Mechanism {
	if runtime.GOOS != "linux" {
		return Mechanism{Why: "sandboxing is not enforced on " + runtime.GOOS}
	}
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return Mechanism{Why: "bubblewrap (bwrap) is not installed; install the bubblewrap package"}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m := Mechanism{Name: Bubblewrap, Path: path}
	argv, err := Policy{Mode: ReadOnly, Workspace: "/", Mechanism: m}.Command("/", []string{"/bin/true"})
	if err != nil {
		return Mechanism{Why: err.Error()}
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	// A cancelled probe must not wait for whatever still holds its output
	// pipe (a child bwrap left behind): chat's set-up is cancelled this way
	// when the user quits during it.
	cmd.WaitDelay = time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return Mechanism{Why: fmt.Sprintf("bwrap cannot create its namespaces here (%v: %s); "+
			"user namespaces may be disabled", err, strings.TrimSpace(string(out)))}
	}
	return m
}

// secretFiles are system files no confined command needs to read.
var secretFiles = []string{"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers"}

// secretDirs are hidden (an empty tmpfs in their place) besides Policy.Hide
// and the user's home.
var secretDirs = []string{"/root", "/etc/sudoers.d", "/etc/ssh"}

// Command returns the command line that runs argv (program and arguments)
// under p in directory dir ("" for the workspace). Off returns argv
// unchanged; a confined mode without a mechanism returns ErrUnenforced.
func (p Policy) Command(dir string, argv []string) ([]string, error) {
	if p.Mode == Off {
		return argv, nil
	}
	if !p.Mechanism.Enforced() {
		return nil, fmt.Errorf("%w: %s", ErrUnenforced, p.Mechanism.Why)
	}
	if p.Workspace == "" || !filepath.IsAbs(p.Workspace) {
		return nil, fmt.Errorf("sandbox: workspace %q must be an absolute path", p.Workspace)
	}
	ws := filepath.Clean(p.Workspace)
	a := []string{p.Mechanism.Path,
		// A user namespace with no capabilities: root outside stays
		// powerless inside (it cannot remount / read-write).
		"--unshare-user", "--cap-drop", "ALL",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--die-with-parent", "--new-session",
		"--ro-bind", "/", "/",
		"--dev", "/dev", "--proc", "/proc",
	}
	if p.Mode == ReadOnly || !p.Network {
		a = append(a, "--unshare-net")
	}
	for _, f := range secretFiles {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			a = append(a, "--ro-bind", "/dev/null", f)
		}
	}
	hide := append([]string{}, secretDirs...)
	if h, err := os.UserHomeDir(); err == nil && h != "/" {
		hide = append(hide, h)
	}
	hide = append(hide, p.Hide...)
	hide = append(hide, "/tmp") // a private /tmp, empty, thrown away
	var inside []string
	for _, d := range hide {
		d = filepath.Clean(d)
		if d == "/" || !filepath.IsAbs(d) || d == ws {
			continue
		}
		if within(d, ws) {
			inside = append(inside, d) // hidden after the workspace is bound
			continue
		}
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			a = append(a, "--tmpfs", d)
		}
	}
	if p.Mode == ReadOnly {
		a = append(a, "--ro-bind", ws, ws)
	} else {
		a = append(a, "--bind", ws, ws)
	}
	for _, d := range inside {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			a = append(a, "--tmpfs", d)
		}
	}
	if p.proxied() {
		// The proxy's socket and the relay are bound into the private
		// /tmp; the relay runs the command.
		if within("/tmp", ws) {
			return nil, fmt.Errorf("sandbox: a network host list needs a workspace other than %s", ws)
		}
		if p.Egress == nil {
			return nil, fmt.Errorf("sandbox: network host list %s has no egress proxy", strings.Join(p.Hosts, ", "))
		}
		socket, relay, err := p.Egress.Route(p.Hosts)
		if err != nil {
			return nil, fmt.Errorf("sandbox: network host list: %w", err)
		}
		const relayIn, socketIn = "/tmp/.talaria-net/relay", "/tmp/.talaria-net/proxy.sock"
		a = append(a, "--ro-bind", relay, relayIn, "--bind", socket, socketIn)
		argv = append([]string{relayIn, RelayCommand, socketIn, strconv.Itoa(RelayPort), "--"}, argv...)
	}
	if dir == "" {
		dir = ws
	}
	a = append(a, "--chdir", dir, "--")
	return append(a, argv...), nil
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
