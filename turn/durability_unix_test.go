//go:build unix

package turn_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testenv"
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
					// Cancel once both processes exist.
					for range 500 {
						if fileExists(env.Workspace, "sh.pid") && fileExists(env.Workspace, "bg.pid") {
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
				pid := readPID(t, env.Workspace, f)
				if !eventually(2*time.Second, func() bool { return processGone(pid) }) {
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
			nextTurnAccepted(t, env, "what happened?")
		})
	}
}

func fileExists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

func readPID(t *testing.T, dir, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return pid
}

// processGone reports whether pid no longer runs (a zombie waiting to be
// reaped by init counts as gone).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func eventually(d time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if ok() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
