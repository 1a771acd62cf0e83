//go:build unix

package crashtest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
	"github.com/talaria-agent/talaria/turn"
)

// bin is the talaria binary TestMain built.
var bin string

func TestMain(m *testing.M) {
	testenv.MainWithBuild(m, testenv.Talaria, &bin)
}

// home is one TALARIA_HOME with its database, a workspace, and the model
// server the processes talk to.
type home struct {
	t      *testing.T
	dir    string
	db     string
	ws     string
	srv    *fakellm.Server
	api    string
	reader store.Store // a second connection, as another process has
	// dbURL, when set, is the PostgreSQL database the processes use
	// (TALARIA_DATABASE_URL) instead of the SQLite file db.
	dbURL string
	// env is added to every process's environment.
	env []string
}

// newModelHome is a home whose scripted server answers with the default
// model script, and a session in it.
func newModelHome(t *testing.T) (*home, string) {
	t.Helper()
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	srv.SetDefault(model)
	h := newHome(t, srv)
	return h, h.newSession()
}

func newHome(t *testing.T, srv *fakellm.Server) *home {
	t.Helper()
	h := &home{t: t, dir: t.TempDir(), ws: t.TempDir(), srv: srv, api: "openai"}
	h.db = filepath.Join(h.dir, "state.db")
	st, err := sqlite.Open(t.Context(), h.db, sqlite.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", h.db, err)
	}
	t.Cleanup(func() { _ = st.Close() })
	h.reader = st
	return h
}

// newSession creates a session the way NewSession does (a fixed system
// prompt), so every process run continues it with --session.
func (h *home) newSession() string {
	h.t.Helper()
	now := time.Now()
	s := &store.Session{ID: store.NewID(now), Title: h.t.Name(), Provider: "custom", Model: "m",
		SystemPrompt: "You are a test agent.", Cwd: h.ws, StartedAt: now, UpdatedAt: now}
	if err := h.reader.CreateSession(h.t.Context(), s); err != nil {
		h.t.Fatal(err)
	}
	return s.ID
}

// command builds `talaria <sub> args…` with a clean environment: no user
// config, no API keys. run and chat get the route flags for h.srv
// (--api, --base-url, --model m) and the workspace first.
func (h *home) command(ctx context.Context, sub string, args ...string) *exec.Cmd {
	all := []string{sub}
	if sub == "run" || sub == "chat" || sub == "serve" {
		base := h.srv.OpenAIBaseURL()
		switch h.api {
		case "anthropic":
			base = h.srv.AnthropicBaseURL()
		case "gemini":
			base = h.srv.GeminiBaseURL()
		}
		// The crash tests find the slow job by the PIDs it writes, which a
		// PID namespace would make its own; confinement, kill -9 included,
		// is tested in internal/testing/sandboxtest.
		all = append(all, "--api", h.api, "--base-url", base, "--model", "m", "--workspace", h.ws, "--sandbox", "off")
	}
	all = append(all, args...)
	cmd := exec.CommandContext(ctx, bin, all...)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + h.dir,
		"TMPDIR=" + os.TempDir(),
		"TALARIA_HOME=" + h.dir,
	}
	if h.dbURL != "" {
		cmd.Env = append(cmd.Env, "TALARIA_DATABASE_URL="+h.dbURL)
	}
	cmd.Env = append(cmd.Env, h.env...)
	cmd.Dir = h.ws
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// proc is a started talaria process.
type proc struct {
	cmd    *exec.Cmd
	stdout *testenv.Buffer
	stderr *testenv.Buffer
	done   chan struct{}
	err    error
}

func (h *home) start(sub string, args ...string) *proc {
	h.t.Helper()
	p := &proc{stdout: &testenv.Buffer{}, stderr: &testenv.Buffer{}, done: make(chan struct{})}
	p.cmd = h.command(h.t.Context(), sub, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		h.t.Fatalf("start talaria %s: %v", sub, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p
}

// wait waits up to d for the process to exit and returns its exit code
// (-1 when it was killed by a signal).
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("talaria did not exit within %v; stderr:\n%s", d, p.stderr)
	}
	return p.cmd.ProcessState.ExitCode()
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// result decodes the --json result on stdout.
func (p *proc) result(t *testing.T) turn.Result {
	t.Helper()
	var r turn.Result
	if err := json.Unmarshal([]byte(p.stdout.String()), &r); err != nil {
		t.Fatalf("stdout is not a turn result (%v):\n%s\nstderr:\n%s", err, p.stdout, p.stderr)
	}
	return r
}

// run runs talaria to the end and returns its exit code.
func (h *home) run(sub string, args ...string) (*proc, int) {
	h.t.Helper()
	p := h.start(sub, args...)
	return p, p.wait(h.t, 60*time.Second)
}

// rows reads a session's rows through the test's own connection.
func (h *home) rows(sid string) []store.Message {
	h.t.Helper()
	rows, err := h.reader.Messages(context.Background(), sid, store.MessageQuery{IncludeArchived: true})
	if err != nil {
		h.t.Fatalf("read rows: %v", err)
	}
	return rows
}

// checkWire fails the test on a strict-validation violation or a request
// testenv.WireProblems finds fault with.
func checkWire(t *testing.T, srv *fakellm.Server) {
	t.Helper()
	testenv.CheckWire(t, srv)
}

// killPIDFile ends the process named in a pid file.
func killPIDFile(t *testing.T, dir, name string) {
	t.Helper()
	if err := syscall.Kill(testenv.ReadPID(t, dir, name), syscall.SIGTERM); err != nil {
		t.Fatalf("kill %s: %v", name, err)
	}
}
