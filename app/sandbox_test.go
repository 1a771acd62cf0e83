package app

import (
	"context"
	"slices"
	"testing"

	"github.com/talaria-agent/talaria/internal/config"
	"github.com/talaria-agent/talaria/tool/sandbox"
)

// TestHostListPolicies: the session's host list comes from
// sandbox.network (not in read-only), and an MCP server's from its own
// sandbox.network, never the session's; read-only drops a list.
func TestHostListPolicies(t *testing.T) {
	cfg := &config.Config{Home: t.TempDir()}
	cfg.Sandbox.Mode = "off" // no bubblewrap needed for the policy itself
	cfg.Sandbox.Network = config.Network{Set: true, Hosts: []string{"a.com", "*.b.org"}}
	sess, err := SandboxPolicy(context.Background(), cfg, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sess.Hosts, []string{"a.com", "*.b.org"}) || sess.Network {
		t.Errorf("session policy %+v", sess)
	}
	closeEgress := WithEgress(sess, nil)
	defer closeEgress()
	if sess.Egress == nil {
		t.Fatal("withEgress set no egress")
	}
	ws := &sandbox.Policy{Mode: sandbox.WorkspaceWrite, Hosts: sess.Hosts, Egress: sess.Egress}
	for _, c := range []struct {
		name  string
		mcp   *config.MCPSandbox
		hosts []string
		net   bool
	}{
		{"default: network on", nil, nil, true},
		{"own list", &config.MCPSandbox{Network: config.Network{Set: true, Hosts: []string{"api.x.com"}}}, []string{"api.x.com"}, false},
		{"off", &config.MCPSandbox{Network: config.Network{Set: true}}, nil, false},
		{"read-only drops the list", &config.MCPSandbox{Mode: "read-only", Network: config.Network{Set: true, Hosts: []string{"api.x.com"}}}, nil, false},
	} {
		p := MCPPolicy(ws, c.mcp)
		if !slices.Equal(p.Hosts, c.hosts) || p.Network != c.net || p.Egress != sess.Egress {
			t.Errorf("%s: got hosts %q network %v", c.name, p.Hosts, p.Network)
		}
	}
	cfg.Sandbox.Mode = "read-only"
	if ro, err := SandboxPolicy(context.Background(), cfg, "", t.TempDir()); err == nil && ro.Hosts != nil {
		t.Errorf("read-only kept the hosts %q", ro.Hosts)
	}
}
