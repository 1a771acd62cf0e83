//go:build unix

package turn_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/turn"
)

// Ctrl+C while a tool runs: the running command and every process it
// started are killed, each call gets exactly one result (the running one
// its own "interrupted", the ones never started a paired marker), and the
// next turn is accepted.
func TestInterruptDuringTool(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api})
			if err := os.WriteFile(filepath.Join(env.Workspace, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			// The shell leaves a background sleep behind it: both must die.
			cmd := `echo $$ > sh.pid; sleep 30 & echo $! > bg.pid; wait`
			args, _ := json.Marshal(map[string]string{"command": cmd})
			env.Srv.Script(fakellm.Calls(
				fakellm.ToolCall("shell", string(args)),
				fakellm.ToolCall("read_file", `{"path":"a.txt"}`),
				fakellm.ToolCall("list_dir", `{}`),
			))
			ctx, cn := newCanceller(t)
			in := agent.Input{Text: "run it", Hooks: turn.Hooks{ToolStart: func(c llm.ToolCall) {
				if c.Name != "shell" {
					return
				}
				go func() {
					// Cancel once both processes exist and their pids are written.
					for range 500 {
						if testenv.PIDWritten(env.Workspace, "sh.pid") && testenv.PIDWritten(env.Workspace, "bg.pid") {
							break
						}
						time.Sleep(10 * time.Millisecond)
					}
					cn.fire()
				}()
			}}}
			res := env.RunWith(ctx, in)
			cn.returnedWithin(t, cancelBound)
			if res.Exit != turn.ExitInterrupted {
				t.Fatalf("exit %s, want interrupted (%s)", res.Exit, res.Explanation)
			}
			for _, f := range []string{"sh.pid", "bg.pid"} {
				pid := testenv.ReadPID(t, env.Workspace, f)
				if !testenv.Eventually(2*time.Second, func() bool { return testenv.ProcessGone(pid) }) {
					t.Errorf("process %d (%s) still runs after the interrupt", pid, f)
				}
			}

			rows := env.Rows()
			if got := testenv.Roles(rows); !slices.Equal(got, []string{"user", "assistant", "tool", "tool", "tool"}) {
				t.Fatalf("rows %v", got)
			}
			calls := rows[1].ToolCalls
			for i, r := range rows[2:] {
				if r.ToolCallID != calls[i].ID || !r.IsError {
					t.Errorf("result %d: call id %q error %v; want an error result for %q", i, r.ToolCallID, r.IsError, calls[i].ID)
				}
			}
			if txt := rows[2].Text(); !strings.Contains(txt, "interrupted") || !strings.Contains(txt, "killed") {
				t.Errorf("the running shell's result %q does not say it was interrupted and killed", txt)
			}
			for _, r := range rows[3:] {
				if r.Text() != turn.InterruptedToolResult {
					t.Errorf("a call that never ran got %q, want the interrupted marker", r.Text())
				}
			}
			env.ContinueOK("what happened?")
		})
	}
}
