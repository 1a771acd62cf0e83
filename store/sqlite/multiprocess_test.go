package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/testing/transcriptgen"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
)

// Environment of a helper process started by TestSeveralProcesses.
const (
	envHelper = "TALARIA_SQLITE_TEST_HELPER"
	envPath   = "TALARIA_SQLITE_TEST_PATH"
	envToken  = "TALARIA_SQLITE_TEST_TOKEN"
	envName   = "TALARIA_SQLITE_TEST_NAME"
	envCount  = "TALARIA_SQLITE_TEST_COUNT"

	exitLeaseLost = 3
)

func TestMain(m *testing.M) {
	switch os.Getenv(envHelper) {
	case "append":
		os.Exit(helperAppend())
	case "turns":
		os.Exit(helperTurns())
	}
	os.Exit(m.Run())
}

// helperAppend is another process appending under a fence.
func helperAppend() int {
	ctx := context.Background()
	token, _ := strconv.ParseInt(os.Getenv(envToken), 10, 64)
	n, _ := strconv.Atoi(os.Getenv(envCount))
	s, err := sqlite.Open(ctx, os.Getenv(envPath), sqlite.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	f := store.Fence{SessionID: "shared", Token: token}
	for i := range n {
		m := &store.Message{Message: llm.NewText(llm.RoleUser, fmt.Sprintf("%s-%d", os.Getenv(envName), i))}
		if err := s.Append(ctx, f, m); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if errors.Is(err, store.ErrLeaseLost) {
				return exitLeaseLost
			}
			return 1
		}
	}
	return 0
}

// helperTurns makes folded turn writes (transcriptgen.WriteTurn) on the
// session "shared" until it is killed, saying "wrote" after each turn.
func helperTurns() int {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, os.Getenv(envPath), sqlite.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	for {
		if _, err := transcriptgen.WriteTurn(ctx, s, "shared", 3, true); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("wrote")
	}
}

// helper is a running helper process; stderr holds what it reported.
type helper struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
}

func (h helper) wait(t *testing.T) error {
	t.Helper()
	err := h.cmd.Wait()
	if h.stderr.Len() > 0 {
		t.Logf("helper said: %s", h.stderr)
	}
	return err
}

func startHelper(t *testing.T, path, name string, token int64, n int) helper {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0])
	cmd.Env = append(os.Environ(), envHelper+"=append", envPath+"="+path, envName+"="+name,
		envToken+"="+strconv.FormatInt(token, 10), envCount+"="+strconv.Itoa(n))
	h := helper{cmd: cmd, stderr: new(bytes.Buffer)}
	cmd.Stderr = h.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestSeveralProcesses(t *testing.T) {
	s := openTemp(t, sqlite.Options{})
	ctx := t.Context()
	if err := s.CreateSession(ctx, &store.Session{ID: "shared"}); err != nil {
		t.Fatal(err)
	}
	l, err := s.AcquireLease(ctx, "shared", "parent", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	helpers := []helper{startHelper(t, s.Path(), "p1", l.Token, n), startHelper(t, s.Path(), "p2", l.Token, n)}
	for i := range n {
		m := &store.Message{Message: llm.NewText(llm.RoleUser, fmt.Sprintf("p0-%d", i))}
		if err := s.Append(ctx, l.Fence(), m); err != nil {
			t.Fatalf("parent Append: %v", err)
		}
	}
	for _, h := range helpers {
		if err := h.wait(t); err != nil {
			t.Fatalf("helper: %v", err)
		}
	}
	got, err := s.Messages(ctx, "shared", store.MessageQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3*n {
		t.Fatalf("rows = %d, want %d", len(got), 3*n)
	}
	next := map[string]int{}
	for i, m := range got {
		if m.Seq != int64(i+1) {
			t.Fatalf("row %d has Seq %d", i, m.Seq)
		}
		name, num, _ := strings.Cut(m.Text(), "-")
		k, err := strconv.Atoi(num)
		if err != nil {
			t.Fatalf("row text %q", m.Text())
		}
		if k != next[name] {
			t.Fatalf("process %s: row %d stored before row %d", name, k, next[name])
		}
		next[name]++
	}

	// After a takeover here, a process still using the old token is fenced out.
	if err := s.ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireLease(ctx, "shared", "parent", time.Minute); err != nil {
		t.Fatal(err)
	}
	err = startHelper(t, s.Path(), "zombie", l.Token, 1).wait(t)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitLeaseLost {
		t.Fatalf("helper with a stale token: %v, want exit code %d", err, exitLeaseLost)
	}
}

// A process killed with SIGKILL at any moment of its folded turn writes
// leaves each write whole or absent: every lease token was taken with its
// user's message (AcquireLeaseAppend), and the session's counters hold
// exactly the cost of the answers stored (AppendSpend). Each kill lands
// at a random point after the process has written at least one turn.
func TestKilledFoldedWritesAreAllOrNothing(t *testing.T) {
	s := openTemp(t, sqlite.Options{})
	ctx := t.Context()
	if err := s.CreateSession(ctx, &store.Session{ID: "shared"}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for kill := range 8 {
		cmd := exec.CommandContext(ctx, os.Args[0])
		cmd.Env = append(os.Environ(), envHelper+"=turns", envPath+"="+s.Path())
		stderr := new(bytes.Buffer)
		cmd.Stderr = stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("kill %d: the helper wrote no turn: %v; stderr: %s", kill, err, stderr)
		}
		time.Sleep(time.Duration(rng.IntN(20000)) * time.Microsecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if stderr.Len() > 0 {
			t.Fatalf("kill %d: the helper failed: %s", kill, stderr)
		}
	}
	// The dead helpers' holder is this test's too (same name): take over.
	l, err := s.AcquireLease(ctx, "shared", "bench:1:x", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.Messages(ctx, "shared", store.MessageQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var users, answers int64
	for i, m := range rows {
		if m.Seq != int64(i+1) {
			t.Fatalf("row %d has Seq %d", i, m.Seq)
		}
		switch m.Role {
		case llm.RoleUser:
			users++
		case llm.RoleAssistant:
			answers++
		}
	}
	if users != l.Token-1 {
		t.Errorf("%d user rows, but %d leases were taken with one: a lease without its message or a message without its lease", users, l.Token-1)
	}
	sess, err := s.GetSession(ctx, "shared")
	if err != nil {
		t.Fatal(err)
	}
	if sess.APICalls != answers || sess.Usage.InputTokens != 1200*answers {
		t.Errorf("counters: %d calls, %d input tokens; %d answers stored: a cost without its row or a row without its cost",
			sess.APICalls, sess.Usage.InputTokens, answers)
	}
	t.Logf("%d turns begun, %d answers", users, answers)
}
