//go:build unix

package crashtest

import (
	"errors"
	"io"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
	"github.com/talaria-agent/talaria/turn"
)

// signalBound is how soon a process must react to Ctrl+C. The engine's own
// bound (1s) is tested in-process; this one leaves room for a loaded
// machine.
const signalBound = 5 * time.Second

// slowJobStopped checks what a stopped slow job must leave: its shell and
// the shell's background child are gone, and its one call is paired with a
// result that says it was interrupted.
func slowJobStopped(t *testing.T, h *home, sid string) {
	t.Helper()
	for _, f := range []string{"sh.pid", "bg.pid"} {
		pid := testenv.ReadPID(t, h.ws, f)
		if !testenv.Eventually(2*time.Second, func() bool { return testenv.ProcessGone(pid) }) {
			t.Errorf("process %d (%s) survived the interrupt", pid, f)
		}
	}
	rows := h.rows(sid)
	var roles []string
	for _, r := range rows {
		roles = append(roles, string(r.Role))
	}
	if !slices.Equal(roles, []string{"user", "assistant", "tool"}) {
		t.Fatalf("rows %v, want user, call, result", roles)
	}
	if r := rows[2]; r.ToolCallID != rows[1].ToolCalls[0].ID || !strings.Contains(r.Text(), "interrupted") {
		t.Errorf("result %q for %s; want the call's own interrupted result", r.Text(), r.ToolCallID)
	}
}

// Ctrl+C in `talaria run` while a tool runs: the process group of the
// command is killed, the call is paired, the process exits 130, and the
// session continues cleanly.
func TestRunCtrlC(t *testing.T) {
	h, sid := newModelHome(t)
	p := h.start("run", "--session", sid, "--yes", "--quiet", "--json", slowPrompt)
	interruptRunning(t, h, p)
	slowJobStopped(t, h, sid)
	// The shell call changes things: its result says, by the ledger's
	// rules, that it may or may not have taken effect.
	if rows := h.rows(sid); !strings.Contains(rows[2].Text(), "may or may not have taken effect") {
		t.Errorf("the interrupted shell call's result %q gives no verdict", rows[2].Text())
	}
	h.srv.Reset()
	if c, code := h.run("run", "--session", sid, "--quiet", continuePrompt); code != 0 {
		t.Fatalf("continue: exit %d\n%s", code, c.stderr)
	}
	checkWire(t, h.srv)
}

// In `talaria chat` the first Ctrl+C stops the running turn and keeps the
// chat; a second one quits — also when the turn had already wound down and
// the chat is back at its prompt.
func TestChatCtrlCTwice(t *testing.T) {
	h, sid := newModelHome(t)

	cmd := h.command(t.Context(), "chat", "--session", sid, "--yes")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, stdout: &testenv.Buffer{}, stderr: &testenv.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	defer stdin.Close()
	if _, err := io.WriteString(stdin, slowPrompt+"\n"); err != nil {
		t.Fatal(err)
	}
	toolStarted(t, h)

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if !testenv.Eventually(signalBound, func() bool { return p.stderr.Contains("was interrupted") }) {
		t.Fatalf("the turn did not stop after the first Ctrl+C; stderr:\n%s", p.stderr)
	}
	if p.exited() {
		t.Fatalf("the first Ctrl+C quit the chat; it should only stop the turn:\n%s", p.stderr)
	}
	// The turn is over and the chat back at its prompt: a second Ctrl+C
	// (soon, as a person presses it) quits.
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(signalBound):
		t.Fatalf("the second Ctrl+C did not quit the chat; stdout:\n%s\nstderr:\n%s", p.stdout, p.stderr)
	}
	slowJobStopped(t, h, sid)
	if code := cmd.ProcessState.ExitCode(); code != 0 && code != exitInterrupted {
		t.Errorf("chat exit %d after a second Ctrl+C", code)
	}
	// Nothing the turn saved is lost and the session goes on.
	if rows := h.rows(sid); slices.ContainsFunc(rows, func(m store.Message) bool { return m.Kind.DisplayOnly() }) {
		t.Errorf("an interrupted turn left a display-only row: %+v", rows)
	}
	h.srv.Reset()
	if c, code := h.run("run", "--session", sid, "--quiet", continuePrompt); code != 0 {
		t.Fatalf("continue: exit %d\n%s", code, c.stderr)
	}
	checkWire(t, h.srv)
}

// Closing the terminal (SIGHUP) or SIGTERM while a tool runs stops the turn
// like Ctrl+C in run, chat and demo's engine alike: the command's process
// group is killed (nothing is left running under PID 1), its call gets its
// interrupted result, and the process exits.
func TestHangupAndTermStopTheTurn(t *testing.T) {
	for _, tc := range []struct {
		cmd string
		sig syscall.Signal
	}{
		{"run", syscall.SIGHUP},
		{"run", syscall.SIGTERM},
		{"chat", syscall.SIGHUP},
		{"chat", syscall.SIGTERM},
	} {
		t.Run(tc.cmd+"/"+tc.sig.String(), func(t *testing.T) {
			h, sid := newModelHome(t)
			var p *proc
			var stdin io.WriteCloser
			if tc.cmd == "run" {
				p = h.start("run", "--session", sid, "--yes", "--quiet", slowPrompt)
			} else {
				cmd := h.command(t.Context(), "chat", "--session", sid, "--yes")
				var err error
				if stdin, err = cmd.StdinPipe(); err != nil {
					t.Fatal(err)
				}
				p = &proc{cmd: cmd, stdout: &testenv.Buffer{}, stderr: &testenv.Buffer{}, done: make(chan struct{})}
				cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				go func() { p.err = cmd.Wait(); close(p.done) }()
				defer stdin.Close()
				if _, err := io.WriteString(stdin, slowPrompt+"\n"); err != nil {
					t.Fatal(err)
				}
			}
			toolStarted(t, h)
			if err := p.cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.done:
			case <-time.After(30 * time.Second):
				t.Fatalf("%s did not exit after %s; stderr:\n%s", tc.cmd, tc.sig, p.stderr)
			}
			if code := p.cmd.ProcessState.ExitCode(); code != exitInterrupted {
				t.Errorf("exit %d, want %d (killed by the signal instead of handling it?)\nstderr:\n%s", code, exitInterrupted, p.stderr)
			}
			slowJobStopped(t, h, sid)
		})
	}
}

// A turn killed with kill -9 after its first answer keeps what that answer
// cost: usage is on disk per answer, not only when the turn ends.
func TestKilledTurnKeepsItsUsage(t *testing.T) {
	h, sid := newModelHome(t)
	p := h.start("run", "--session", sid, "--yes", "--quiet", slowPrompt)
	toolStarted(t, h) // the model's first answer (the call) has arrived
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(t, 30*time.Second)
	for _, f := range []string{"sh.pid", "bg.pid"} {
		_ = syscall.Kill(testenv.ReadPID(t, h.ws, f), syscall.SIGKILL)
	}
	st, err := sqlite.Open(t.Context(), h.db, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := st.GetSession(t.Context(), sid)
	if err != nil {
		t.Fatal(err)
	}
	if s.APICalls < 1 || s.Usage.OutputTokens == 0 {
		t.Errorf("after kill -9 the session records %d API calls, %+v; the first answer's usage was lost", s.APICalls, s.Usage)
	}
}

// sessions delete --force interrupts the running turn of another process
// (its commands are killed and its call is paired), waits for it to
// finalize, then deletes the session.
func TestDeleteForceInterruptsTheTurn(t *testing.T) {
	h, sid := newModelHome(t)
	p := h.start("run", "--session", sid, "--yes", "--quiet", slowPrompt)
	toolStarted(t, h)
	if c, code := h.run("sessions", "delete", sid); code != 8 {
		t.Fatalf("delete without --force during a turn: exit %d, want 8\n%s", code, c.stderr)
	}
	c, code := h.run("sessions", "delete", "--force", sid)
	if code != 0 {
		t.Fatalf("delete --force: exit %d\n%s", code, c.stderr)
	}
	if code := p.wait(t, 30*time.Second); code != exitInterrupted {
		t.Errorf("the interrupted run exited %d, want %d", code, exitInterrupted)
	}
	for _, f := range []string{"sh.pid", "bg.pid"} {
		pid := testenv.ReadPID(t, h.ws, f)
		if !testenv.Eventually(2*time.Second, func() bool { return testenv.ProcessGone(pid) }) {
			t.Errorf("process %d (%s) survived", pid, f)
		}
	}
	if _, err := h.reader.GetSession(t.Context(), sid); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the session is still there: %v", err)
	}
}

// interruptRunning sends SIGINT to a `talaria run --json` once its tool
// runs, and checks it stops within signalBound with exit 130 and an
// interrupted result.
func interruptRunning(t *testing.T, h *home, p *proc) {
	t.Helper()
	toolStarted(t, h)
	sent := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code := p.wait(t, 30*time.Second)
	took := time.Since(sent)
	t.Logf("talaria run exited %v after SIGINT", took.Round(time.Millisecond))
	if took > signalBound {
		t.Errorf("talaria run took %v to stop after Ctrl+C", took)
	}
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitInterrupted, p.stderr)
	}
	if res := p.result(t); res.Exit != turn.ExitInterrupted {
		t.Errorf("result exit %s", res.Exit)
	}
}
