package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// Without --workspace, run and chat work in the project root above the
// current directory: the AGENTS.md files from the root down to here reach
// a new session's system prompt (root first, the nearest last), the memory
// kept at the root is found from a subdirectory, and a continued session
// keeps the prompt it started with.
func TestProjectAwareness(t *testing.T) {
	for _, cmd := range []string{"run", "chat"} {
		t.Run(cmd, func(t *testing.T) {
			e := newCLIEnv(t)
			root := e.ws
			sub := filepath.Join(root, "svc", "api")
			for _, d := range []string{filepath.Join(root, ".git"), sub} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			e.writeFile("AGENTS.md", "ROOT RULE: run make check\n")
			if err := os.WriteFile(filepath.Join(root, "svc", "AGENTS.md"), []byte("SVC RULE: no globals\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			route := []string{"--api", "openai", "--base-url", e.srv.OpenAIBaseURL(), "--model", testModel, "--sandbox", "off"}

			t.Chdir(root)
			if out := e.run("", "memory", "add", "ROOT FACT: tabs"); out.code != exitOK {
				t.Fatalf("memory add: %d %s", out.code, out.stderr)
			}
			t.Chdir(sub)
			e.srv.Script(fakellm.Calls(fakellm.ToolCall("write_file", `{"path":"made.txt","content":"x"}`)), fakellm.Text("ok"))
			var out cliOut
			if cmd == "run" {
				out = e.run("", append(append([]string{"run", "--yes"}, route...), "hi")...)
			} else {
				out = e.run("hi\n", append([]string{"chat", "--plain", "--yes"}, route...)...)
			}
			if out.code != exitOK {
				t.Fatalf("%s: exit %d\n%s", cmd, out.code, out.stderr)
			}
			sys := e.srv.Requests()[0].System
			r, s, f := strings.Index(sys, "ROOT RULE"), strings.Index(sys, "SVC RULE"), strings.Index(sys, "ROOT FACT")
			if r < 0 || s < r || f < 0 {
				t.Fatalf("system prompt lacks the AGENTS.md texts in root→cwd order or the root's memory:\n%s", sys)
			}
			if !strings.Contains(sys, "Workspace: "+root+"\n") {
				t.Errorf("workspace is not the project root:\n%s", sys)
			}
			if _, err := os.Stat(filepath.Join(root, "made.txt")); err != nil {
				t.Errorf("the tool did not work in the project root: %v", err)
			}

			// AGENTS.md changed: the continued session's prompt is rebuilt
			// once, deliberately (issue 29's capability stamp), and says so.
			e.writeFile("AGENTS.md", "ROOT RULE CHANGED\n")
			e.srv.Script(fakellm.Text("again"))
			if out := e.run("", append(append([]string{"run", "-c"}, route...), "more")...); out.code != exitOK {
				t.Fatalf("run -c: %d %s", out.code, out.stderr)
			}
			reqs := e.srv.Requests()
			if got := reqs[len(reqs)-1].System; got == sys || !strings.Contains(got, "ROOT RULE CHANGED") {
				t.Errorf("a continued session's prompt was not rebuilt with the changed AGENTS.md:\n%s", got)
			}
		})
	}
}
