package config

import (
	"strings"
	"testing"
	"time"
)

func TestMCPServersLoad(t *testing.T) {
	c, err := load(t, `
mcp_servers:
  filesystem:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
    env: {TOKEN: "${FS_TOKEN}"}
    timeout: 90s
    tools: {allow: ["read_*"], deny: [write_file]}
    approval: auto
    per_session: true
  issues:
    url: https://mcp.example.com/mcp
    headers: {Authorization: "Bearer ${ISSUES_TOKEN}"}
    enabled: false
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.MCPServerNames(), ","); got != "filesystem,issues" {
		t.Fatalf("names %s", got)
	}
	fs := c.MCPServers["filesystem"]
	if fs.Command != "npx" || len(fs.Args) != 3 || fs.Env["TOKEN"] != "${FS_TOKEN}" || time.Duration(fs.Timeout) != 90*time.Second ||
		fs.Tools.Allow[0] != "read_*" || fs.Tools.Deny[0] != "write_file" || fs.Approval != "auto" || !fs.PerSession || !fs.IsEnabled() {
		t.Errorf("filesystem: %+v", fs)
	}
	// References stay unexpanded in the config: expansion happens at
	// start, so a printed config never holds a secret.
	is := c.MCPServers["issues"]
	if is.Headers["Authorization"] != "Bearer ${ISSUES_TOKEN}" || is.IsEnabled() {
		t.Errorf("issues: %+v", is)
	}
}

func TestMCPServersValidate(t *testing.T) {
	cases := []struct{ body, want string }{
		{"mcp_servers:\n  a: {args: [x]}\n", "mcp_servers.a: set command (a stdio server) or url"},
		{"mcp_servers:\n  a: {command: x, url: http://h/mcp}\n", "set command or url, not both"},
		{"mcp_servers:\n  a: {url: ftp://h}\n", `mcp_servers.a.url "ftp://h" is not an http(s) URL`},
		{"mcp_servers:\n  a: {url: http://h/mcp, transport: grpc}\n", "transport is \"grpc\"; use streamable or sse"},
		{"mcp_servers:\n  a: {command: x, approval: never}\n", "approval is \"never\"; use ask or auto"},
		{"mcp_servers:\n  a: {url: http://h/mcp, per_session: true}\n", "per_session applies to stdio servers only"},
		{"mcp_servers:\n  a: {command: x, colour: red}\n", "unknown key colour"},
		{"mcp_servers:\n  a: {url: \"${MCP_URL}\", transport: sse}\n", ""},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			_, err := load(t, tc.body, nil)
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
