//go:build !linux

package sandbox

// Group bounds and kills a command's processes; only on Linux.
type Group struct{}

// NewGroup: no cgroups outside Linux.
func NewGroup(int) (*Group, bool) { return nil, false }

// Wrap returns argv.
func (g *Group) Wrap(argv []string) []string { return argv }

// Kill does nothing.
func (g *Group) Kill() {}

// Remove does nothing.
func (g *Group) Remove() error { return nil }

// ReapOrphans: nothing to reap outside Linux.
func ReapOrphans() int { return 0 }
