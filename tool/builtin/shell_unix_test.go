//go:build unix

package builtin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/tool"
)

// grandchildCmd starts a background grandchild, records its pid, then
// blocks in a foreground child.
const grandchildCmd = `sleep 100 & echo $! > gc.pid; echo started; sleep 100`

func TestShell(t *testing.T) {
	root, _ := testWS(t)
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	sh := Shell(Options{Root: root, Env: []string{"TALARIA_TEST_VAR=from-options"}})
	tests := []struct {
		name    string
		args    map[string]any
		want    string
		contain []string
		isErr   bool
	}{
		{name: "success", args: map[string]any{"command": "echo hello"}, want: "hello\n[exit code 0]"},
		{name: "runs in root", args: map[string]any{"command": "pwd -P"}, want: realRoot + "\n[exit code 0]"},
		{name: "env", args: map[string]any{"command": "echo $TALARIA_TEST_VAR"}, want: "from-options\n[exit code 0]"},
		{name: "exit code and stderr", args: map[string]any{"command": "echo out; echo err >&2; exit 2"},
			want: "out\nerr\n[exit code 2]", isErr: true},
		{name: "no output", args: map[string]any{"command": "true"}, want: "(no output)\n[exit code 0]"},
		{name: "stdin is empty", args: map[string]any{"command": "cat; echo done"}, want: "done\n[exit code 0]"},
		{name: "killed by signal", args: map[string]any{"command": "kill -9 $$"}, isErr: true,
			contain: []string{"terminated by signal 9"}},
		{name: "empty command", args: map[string]any{"command": " "}, isErr: true, contain: []string{"command is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, sh, tt.args)
			if res.IsError != tt.isErr {
				t.Fatalf("IsError = %v, want %v:\n%s", res.IsError, tt.isErr, res.Content)
			}
			if tt.want != "" && res.Content != tt.want {
				t.Errorf("got %q, want %q", res.Content, tt.want)
			}
			for _, c := range tt.contain {
				if !strings.Contains(res.Content, c) {
					t.Errorf("content lacks %q:\n%s", c, res.Content)
				}
			}
		})
	}
}

func TestShellOutputCapped(t *testing.T) {
	root, _ := testWS(t)
	res := call(t, Shell(Options{Root: root, MaxOutput: 2000}), map[string]any{"command": "seq 1 100000"})
	if res.IsError {
		t.Fatal(res.Content)
	}
	if len(res.Content) > 2000 {
		t.Errorf("content is %d bytes, over MaxOutput", len(res.Content))
	}
	for _, want := range []string{"1\n2\n3\n", "99999\n100000\n[exit code 0]", "bytes of output omitted"} {
		if !strings.Contains(res.Content, want) {
			t.Errorf("content lacks %q:\n%s", want, res.Content)
		}
	}
}

func TestShellTimeoutKillsGroup(t *testing.T) {
	root, _ := testWS(t)
	sh := Shell(Options{Root: root, ShellTimeout: time.Hour})
	done := make(chan tool.Result, 1)
	go func() { done <- call(t, sh, map[string]any{"command": grandchildCmd, "timeout_seconds": 1}) }()
	gc := readPID(t, filepath.Join(root, "gc.pid"))
	t.Cleanup(func() { _ = syscall.Kill(gc, syscall.SIGKILL) })
	var res tool.Result
	select {
	case res = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("shell did not return after its timeout")
	}
	if !res.IsError || !strings.Contains(res.Content, "[timed out after 1s") || !strings.Contains(res.Content, "started") {
		t.Errorf("got %+v", res)
	}
	waitGone(t, gc)
}

func TestShellCancelKillsGroup(t *testing.T) {
	root, _ := testWS(t)
	sh := Shell(Options{Root: root})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan tool.Result, 1)
	go func() { done <- callCtx(t, ctx, sh, map[string]any{"command": grandchildCmd}) }()
	gc := readPID(t, filepath.Join(root, "gc.pid"))
	t.Cleanup(func() { _ = syscall.Kill(gc, syscall.SIGKILL) })
	// The command runs in a session of its own (no controlling terminal).
	mine, ok1 := sessionOf(os.Getpid())
	theirs, ok2 := sessionOf(gc)
	if ok1 && ok2 && mine == theirs {
		t.Errorf("command shares the caller's session %d", mine)
	}
	cancel()
	var res tool.Result
	select {
	case res = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("shell did not return after cancellation")
	}
	if !res.IsError || !strings.Contains(res.Content, "[interrupted") {
		t.Errorf("got %+v", res)
	}
	waitGone(t, gc)
}

// TestShellBackgroundKeepsPipe: a command that leaves a background process
// holding its output must still return.
func TestShellBackgroundKeepsPipe(t *testing.T) {
	root, _ := testWS(t)
	done := make(chan tool.Result, 1)
	go func() {
		done <- call(t, Shell(Options{Root: root}), map[string]any{"command": "sleep 100 & echo $! > bg.pid; echo ok"})
	}()
	bg := readPID(t, filepath.Join(root, "bg.pid"))
	t.Cleanup(func() { _ = syscall.Kill(bg, syscall.SIGKILL) })
	select {
	case res := <-done:
		if res.IsError || !strings.HasPrefix(res.Content, "ok\n[exit code 0") {
			t.Errorf("got %+v", res)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("shell hung on a background process holding the output pipe")
	}
}

func TestShellTimeoutArgument(t *testing.T) {
	root, _ := testWS(t)
	tests := []struct {
		name    string
		opt     Options
		seconds int
		want    string
	}{
		{"option default", Options{Root: root, ShellTimeout: time.Second}, 0, "[timed out after 1s"},
		{"argument lowers", Options{Root: root}, 1, "[timed out after 1s"},
		{"argument raises", Options{Root: root, ShellTimeout: time.Second}, 2, "[timed out after 2s"},
		{"capped at max", Options{Root: root, ShellTimeout: time.Hour}, 0, fmt.Sprint(MaxShellTimeout)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "capped at max" {
				// Only check the description; waiting 10 minutes is not a test.
				if d := Shell(tt.opt).Info().Description; !strings.Contains(d, "at most 600") {
					t.Errorf("description %q", d)
				}
				return
			}
			args := map[string]any{"command": "sleep 30"}
			if tt.seconds > 0 {
				args["timeout_seconds"] = tt.seconds
			}
			res := call(t, Shell(tt.opt), args)
			if !res.IsError || !strings.Contains(res.Content, tt.want) {
				t.Errorf("got %+v, want %q", res, tt.want)
			}
		})
	}
}
