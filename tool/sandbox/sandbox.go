// Package sandbox confines the processes Talaria's tools start: the shell
// tool's commands and MCP servers. A Policy names a mode (read-only,
// workspace-write, off), whether the network is allowed, and the
// environment the process may see; Command turns a program and its
// arguments into the command line that runs it under the policy.
//
// On Linux the confinement is bubblewrap (bwrap): a mount namespace in
// which the whole file system is read-only except the workspace (in
// workspace-write) and a private /tmp, with the user's home, Talaria's home
// and the system's password files hidden; a PID namespace, so every process
// the command starts dies with it; and no network namespace shared when the
// network is off. Elsewhere nothing is enforced and Detect says so.
package sandbox

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Mode is how much a confined process may do.
type Mode string

// The modes, from narrowest to widest.
const (
	// ReadOnly: read the workspace and the system, write nothing
	// (a private, throw-away /tmp excepted), no network.
	ReadOnly Mode = "read-only"
	// WorkspaceWrite (the default): write only inside the workspace and a
	// private /tmp; network only when the operator allows it.
	WorkspaceWrite Mode = "workspace-write"
	// Off: no confinement; only when the operator chooses it explicitly.
	Off Mode = "off"
)

// Modes lists the modes, narrowest first.
var Modes = []Mode{ReadOnly, WorkspaceWrite, Off}

// ErrBadMode is returned by ParseMode for an unknown mode name.
var ErrBadMode = errors.New("unknown sandbox mode")

// ParseMode reads a mode name; "" is WorkspaceWrite.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.TrimSpace(s)); m {
	case "":
		return WorkspaceWrite, nil
	case ReadOnly, WorkspaceWrite, Off:
		return m, nil
	}
	return "", fmt.Errorf("%w %q; use read-only, workspace-write or off", ErrBadMode, s)
}

func (m Mode) rank() int { return slices.Index(Modes, m) }

// Narrower returns the narrower of m and n: what a child of a process in
// mode m asking for n gets (a subagent, an MCP server). Never wider.
func (m Mode) Narrower(n Mode) Mode {
	if n.rank() < 0 || m.rank() < 0 {
		return ReadOnly
	}
	if n.rank() < m.rank() {
		return n
	}
	return m
}

// Writes reports whether the mode lets tools write files.
func (m Mode) Writes() bool { return m != ReadOnly }

// Policy is what one confined process may do.
type Policy struct {
	Mode Mode
	// Network lets the process reach the network (workspace-write and off;
	// read-only never has it).
	Network bool
	// Workspace is the directory the process may write in workspace-write
	// and read in every mode (absolute).
	Workspace string
	// Hide lists more paths the process must not see (Talaria's home with
	// its database and configuration); the user's home is always hidden.
	Hide []string
	// Mechanism is what enforces the policy (from Detect).
	Mechanism Mechanism
	// Hosts, when Network is false and the mode writes, is the list of
	// hosts the process may reach (sandbox.network as a list): it still
	// gets its own network namespace, and a relay inside it is the only
	// way out, to an egress proxy that connects only to these hosts.
	Hosts []string
	// Egress starts those proxies; a policy with Hosts needs it.
	Egress Egress
}

// Egress gives confined processes their way out to a host list.
type Egress interface {
	// Route returns the Unix socket of a proxy allowing hosts (started on
	// first use) and the relay binary to run inside the sandbox as
	// `relay RelayCommand SOCKET PORT -- PROGRAM ARGS...`.
	Route(hosts []string) (socket, relay string, err error)
}

// RelayCommand is the talaria binary's hidden subcommand that is the
// relay inside a sandbox with a host list.
const RelayCommand = "__netrelay"

// RelayPort is the port the relay listens on in the sandbox's loopback
// (its own network namespace: nothing else is there).
const RelayPort = 3128

// proxied reports whether the process reaches the network only through
// the egress proxy.
func (p Policy) proxied() bool {
	return p.Mode == WorkspaceWrite && !p.Network && len(p.Hosts) > 0
}

// Narrow returns p restricted to mode n and network net: never wider than p.
func (p Policy) Narrow(n Mode, net bool) Policy {
	p.Mode = p.Mode.Narrower(n)
	p.Network = p.Network && net
	if !net {
		p.Hosts = nil
	}
	return p
}

// NarrowHosts returns p whose commands reach only hosts (a principal's
// list in serve): an empty list turns the network off; a list needs a
// server that allows the network, and when the server has a list of its
// own every entry must be on it. It never widens p.
func (p Policy) NarrowHosts(hosts []string) (Policy, error) {
	if len(hosts) == 0 {
		p.Network, p.Hosts = false, nil
		return p, nil
	}
	switch {
	case p.Mode == Off:
		return p, fmt.Errorf("a host list needs a confined sandbox mode; the mode here is off")
	case p.Mode == ReadOnly:
		// read-only reaches no network at all; the list changes nothing.
		p.Network, p.Hosts = false, nil
		return p, nil
	case p.Network:
	case len(p.Hosts) > 0:
		for _, h := range hosts {
			if !slices.Contains(p.Hosts, h) {
				return p, fmt.Errorf("host %q is not in the server's sandbox.network list", h)
			}
		}
	default:
		return p, fmt.Errorf("the server's sandbox.network is off; a principal cannot turn it on")
	}
	p.Network, p.Hosts = false, slices.Clone(hosts)
	return p, nil
}

// String describes the policy for start-up lines and doctor.
func (p Policy) String() string {
	if p.Mode == Off {
		return "off (commands run unconfined)"
	}
	net := "network off"
	switch {
	case p.Network && p.Mode != ReadOnly:
		net = "network on"
	case p.proxied():
		net = "network: hosts " + strings.Join(p.Hosts, ", ") + " (proxy)"
	}
	return fmt.Sprintf("%s, %s, enforced by %s", p.Mode, net, p.Mechanism.Describe())
}
