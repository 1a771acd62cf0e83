//go:build unix

package crashtest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// Exit codes of the CLI that these tests expect.
const (
	exitOther       = 1
	exitBusy        = 8
	exitInterrupted = 130
)

// toolStarted waits until the slow job's shell and its background child
// have written their pid files.
func toolStarted(t *testing.T, h *home) {
	t.Helper()
	if !testenv.Eventually(20*time.Second, func() bool {
		// Written, not only created: the shell's redirection creates the
		// file before echo fills it.
		return pidWritten(h.ws, "sh.pid") && pidWritten(h.ws, "bg.pid")
	}) {
		t.Fatal("the slow job never started")
	}
}

func pidWritten(dir, name string) bool {
	b, err := os.ReadFile(filepath.Join(dir, name))
	return err == nil && strings.HasSuffix(string(b), "\n")
}

// Two `talaria run` processes on one session at once. One that will not
// wait returns the early result busy at once and keeps its message as an
// unsent row; one that waits runs after the first turn ends. The turns'
// rows never interleave and every request is valid.
func TestTwoProcessesOneSession(t *testing.T) {
	h, sid := newModelHome(t)

	first := h.start("run", "--session", sid, "--yes", "--quiet", "--json", slowPrompt)
	toolStarted(t, h)

	impatient, code := h.run("run", "--session", sid, "--quiet", "--json", "--wait", "200ms", "Impatient "+quickPrompt)
	if code != exitBusy {
		t.Fatalf("impatient second process: exit %d, want %d (busy)\nstderr:\n%s", code, exitBusy, impatient.stderr)
	}
	busy := impatient.result(t)
	if busy.Exit != turn.ExitBusy || !strings.Contains(busy.Explanation, "saved") {
		t.Errorf("impatient result: exit %s, %q", busy.Exit, busy.Explanation)
	}

	patient := h.start("run", "--session", sid, "--quiet", "--json", "--wait", "30s", "Patient "+quickPrompt)
	time.Sleep(300 * time.Millisecond) // it is waiting now, not running
	if patient.exited() {
		t.Fatalf("the waiting process did not wait: %s", patient.stderr)
	}
	killPIDFile(t, h.ws, "bg.pid") // lets the slow job finish
	if code := first.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("first process: exit %d\n%s", code, first.stderr)
	}
	if code := patient.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("waiting process: exit %d\n%s", code, patient.stderr)
	}
	a, b := first.result(t), patient.result(t)
	if a.Exit != turn.ExitCompleted || b.Exit != turn.ExitCompleted || b.FinalText != "Quick answer." {
		t.Fatalf("results: first %s %q, waiting %s %q", a.Exit, a.FinalText, b.Exit, b.FinalText)
	}

	rows := h.rows(sid)
	var order []string
	for _, r := range rows {
		if r.Kind.DisplayOnly() {
			if r.TurnID != busy.TurnID || r.Kind != store.RowUnsent || !strings.Contains(r.Text(), "Impatient") {
				t.Errorf("unexpected display-only row %+v", r)
			}
			continue
		}
		if len(order) == 0 || order[len(order)-1] != r.TurnID {
			order = append(order, r.TurnID)
		}
	}
	if !slices.Equal(order, []string{a.TurnID, b.TurnID}) {
		t.Errorf("turn order of the rows %v; want %s's rows, then %s's, not interleaved", order, a.TurnID, b.TurnID)
	}
	if !slices.ContainsFunc(rows, func(m store.Message) bool { return m.Kind == store.RowUnsent }) {
		t.Error("the busy process's message was not kept")
	}
	checkWire(t, h.srv)
	for i, r := range h.srv.Requests() {
		for _, m := range r.Messages {
			if strings.Contains(m.Text, "Impatient") {
				t.Errorf("request %d sent the unsent message", i)
			}
		}
	}
}

// A process whose lease was taken over (it was stopped past its lease's
// expiry, or an operator broke the lease) cannot write any more: its next
// append is refused by the fence in the same transaction, it stops with
// the cause named, and the other holder's rows stay untouched.
func TestTakenOverProcessIsFenced(t *testing.T) {
	h, sid := newModelHome(t)

	victim := h.start("run", "--session", sid, "--yes", "--quiet", "--json", slowPrompt)
	toolStarted(t, h)

	// Take the lease over from outside, as a process that found it expired
	// would: the victim's token is no longer the session's.
	_, err := h.reader.AcquireLease(t.Context(), sid, "taker", time.Minute)
	held, ok := err.(*store.LeaseHeldError)
	if !ok {
		t.Fatalf("the victim does not hold the lease: %v", err)
	}
	if err := h.reader.ReleaseLease(t.Context(), store.Lease{SessionID: sid, Token: held.Token}); err != nil {
		t.Fatal(err)
	}
	taker, err := h.reader.AcquireLease(t.Context(), sid, "taker", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	mine := &store.Message{Message: llm.NewText(llm.RoleUser, "written by the new holder")}
	if err := h.reader.Append(t.Context(), taker.Fence(), mine); err != nil {
		t.Fatal(err)
	}

	killPIDFile(t, h.ws, "bg.pid") // the victim's tool finishes and tries to save its result
	code := victim.wait(t, 30*time.Second)
	res := victim.result(t)
	if code != exitOther || res.Failure == nil || res.Failure.Reason() != "persistence:lease_lost" {
		t.Fatalf("victim: exit %d, result %s %+v; want exit %d, persistence:lease_lost", code, res.Exit, res.Failure, exitOther)
	}
	if !strings.Contains(res.Explanation, "another process took over") {
		t.Errorf("explanation %q does not name the takeover", res.Explanation)
	}
	rows := h.rows(sid)
	at := slices.IndexFunc(rows, func(m store.Message) bool { return m.ID == mine.ID })
	if at < 0 {
		t.Fatal("the new holder's row is gone")
	}
	for _, r := range rows[at+1:] {
		t.Errorf("a row landed after the takeover: %s %q (turn %s)", r.Role, r.Text(), r.TurnID)
	}
	if err := h.reader.ReleaseLease(t.Context(), taker); err != nil {
		t.Fatal(err)
	}
	h.srv.Reset()
	if p, code := h.run("run", "--session", sid, "--quiet", continuePrompt); code != 0 {
		t.Fatalf("continue: exit %d\n%s", code, p.stderr)
	}
	checkWire(t, h.srv)
}
