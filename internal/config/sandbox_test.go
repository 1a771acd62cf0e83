package config

import (
	"slices"
	"strings"
	"testing"
)

func TestSandboxNetwork(t *testing.T) {
	for _, c := range []struct {
		name, body string
		on         bool
		hosts      []string
		err        string
	}{
		{"default", "sandbox: {mode: workspace-write}\n", false, nil, ""},
		{"true", "sandbox:\n  network: true\n", true, nil, ""},
		{"false", "sandbox:\n  network: false\n", false, nil, ""},
		{"hosts", "sandbox:\n  network: [proxy.golang.org, \"*.github.com\", \"10.0.0.5:8080\"]\n", false,
			[]string{"proxy.golang.org", "*.github.com", "10.0.0.5:8080"}, ""},
		{"bad host", "sandbox:\n  network: [\"http://x.com\"]\n", false, nil, "not a host"},
		{"star", "sandbox:\n  network: [\"*\"]\n", false, nil, "network: true allows every host"},
		{"word", "sandbox:\n  network: some\n", false, nil, "true, false or a list of hosts"},
		{"mcp hosts", "mcp_servers:\n  s:\n    command: x\n    sandbox:\n      network: [api.example.com]\n", false, nil, ""},
		{"mcp bad", "mcp_servers:\n  s:\n    command: x\n    sandbox:\n      network: [\"a b\"]\n", false, nil, "not a host"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := load(t, c.body, nil)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("want an error containing %q, got %v", c.err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n := cfg.Sandbox.Network
			if n.On != c.on || !slices.Equal(n.Hosts, c.hosts) {
				t.Errorf("network = %+v, want on=%v hosts=%q", n, c.on, c.hosts)
			}
			if s := cfg.MCPServers["s"]; s.Sandbox != nil && !slices.Equal(s.Sandbox.Network.Hosts, []string{"api.example.com"}) {
				t.Errorf("mcp server network = %+v", s.Sandbox.Network)
			}
		})
	}
}
