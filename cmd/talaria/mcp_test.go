package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/tool/mcp"
)

// TestMCPCommands drives `talaria mcp list`, `mcp test`, `doctor` and a
// real `talaria run` against the mcptest server over stdio.
func TestMCPCommands(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mcptestserver")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/talaria-agent/talaria/internal/testing/mcptest/mcptestserver").CombinedOutput(); err != nil {
		t.Fatalf("build mcptestserver: %v\n%s", err, out)
	}
	const secret = "s3cr3t-value-never-printed"
	config := func(e *cliEnv, approval string) string {
		notes := t.TempDir()
		e.env["MY_TOKEN"] = secret
		// The test server lives in and writes notes to temp dirs a
		// sandbox would hide; confinement is tested in internal/testing/sandboxtest.
		e.writeConfig(`sandbox: {mode: off}
mcp_servers:
  test:
    command: ` + bin + `
    sandbox: {mode: off}
    env: {MCPTEST_DIR: ` + notes + `, MCPTEST_TOKEN: "${MY_TOKEN}"}
    approval: ` + approval + `
    tools: {deny: [crash, garbage]}
  broken:
    command: /nonexistent/mcp-server
`)
		return notes
	}
	noSecret := func(t *testing.T, out cliOut) {
		if strings.Contains(out.stdout+out.stderr, secret) {
			t.Error("a ${VAR} secret was printed")
		}
	}

	t.Run("list", func(t *testing.T) {
		e := newCLIEnv(t)
		config(e, "ask")
		out := e.run("", "mcp", "list", "--json")
		if out.code != exitOther {
			t.Errorf("exit %d with a failed server; want %d", out.code, exitOther)
		}
		var reps []mcp.ServerReport
		if err := json.Unmarshal([]byte(out.stdout), &reps); err != nil {
			t.Fatalf("%v\n%s", err, out.stdout)
		}
		if len(reps) != 2 || reps[0].Name != "broken" || reps[0].State != "failed" || reps[0].Error == "" || reps[1].State != "ready" {
			t.Fatalf("reports: %+v", reps)
		}
		var echo *mcp.ToolReport
		for i, tr := range reps[1].Tools {
			if tr.Name == "echo" {
				echo = &reps[1].Tools[i]
			}
			if tr.Name == "crash" {
				t.Error("denied tool listed")
			}
		}
		if echo == nil || echo.ModelName != "test__echo" || !echo.ReadOnly {
			t.Errorf("echo: %+v", echo)
		}
		noSecret(t, out)
		text := e.run("", "mcp", "list")
		if !strings.Contains(text.stdout, "test (stdio): ready") || !strings.Contains(text.stdout, "takes effect at the next session") {
			t.Errorf("mcp list:\n%s", text.stdout)
		}
	})

	t.Run("test and doctor", func(t *testing.T) {
		e := newCLIEnv(t)
		config(e, "ask")
		out := e.run("", "mcp", "test", "test")
		if out.code != exitOK || !strings.Contains(out.stdout, "started and listed") || !strings.Contains(out.stdout, "echo → test__echo (read-only)") {
			t.Errorf("mcp test: %d\n%s%s", out.code, out.stdout, out.stderr)
		}
		if out := e.run("", "mcp", "test", "broken"); out.code != exitOther || !strings.Contains(out.stderr, "no such file") {
			t.Errorf("mcp test broken: %d %s", out.code, out.stderr)
		}
		if out := e.run("", "mcp", "test", "nope"); out.code != exitUsage {
			t.Errorf("unknown server: %d", out.code)
		}
		doc := e.run("", "doctor")
		if !strings.Contains(doc.stdout, "ok   mcp server test (stdio)") || !strings.Contains(doc.stdout, "FAIL mcp server broken") {
			t.Errorf("doctor:\n%s", doc.stdout)
		}
	})

	// run: read-only MCP tools run; the mutating one follows the approval
	// rules (refused without --yes, allowed by approval: auto); the failed
	// server costs one status line and the turn goes on.
	for _, c := range []struct {
		approval string
		wrote    bool
	}{{"ask", false}, {"auto", true}} {
		t.Run("run approval "+c.approval, func(t *testing.T) {
			e := newCLIEnv(t)
			notes := config(e, c.approval)
			e.srv.Script(
				fakellm.Calls(fakellm.ToolCall("test__echo", `{"text":"hi"}`), fakellm.ToolCall("test__write_note", `{"name":"n","text":"x"}`)),
				fakellm.Text("done"),
			)
			out := e.runTurn("openai", nil, "go")
			if out.code != exitOK {
				t.Fatalf("exit %d: %s", out.code, out.stderr)
			}
			if !strings.Contains(out.stderr, "· mcp: server broken failed to start") {
				t.Errorf("no status line for the failed server:\n%s", out.stderr)
			}
			if got := testenv.FileExists(notes, "note-n"); got != c.wrote {
				t.Errorf("note written: %v, want %v", got, c.wrote)
			}
			if r, _ := toolResult(e.srv.Requests()[1], "test__echo"); r != "echo: hi" {
				t.Errorf("echo result %q", r)
			}
			e.noViolations()
			noSecret(t, out)
		})
	}
}
