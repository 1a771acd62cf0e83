//go:build unix

package hostile

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
)

// bin is the talaria binary TestMain built.
var bin string

func TestMain(m *testing.M) {
	testenv.MainWithBuild(m, testenv.Talaria, &bin)
}

// options shape one serve process.
type options struct {
	// Config is extra YAML appended to the generated config.yaml (which
	// sets nothing but the database path).
	Config string
	// Env is extra NAME=VALUE pairs for the serve process (and for the
	// token commands).
	Env []string
	// Principals get one token each, made with `serve token create`
	// before the server starts; the name is the principal.
	Principals []string
	// Args are extra flags for `talaria serve`.
	Args []string
	// Model answers the scripted model server; nil: a plain "ok".
	Model func(fakellm.Request) fakellm.Step
	// Home, when set, is the TALARIA_HOME of an earlier server to start
	// again on (its database and tokens); its config.yaml is rewritten.
	Home string
}

// server is one running `talaria serve` with its home, workspace, model
// server and tokens.
type server struct {
	t      testing.TB
	URL    string // http://127.0.0.1:PORT/ (with the trailing slash)
	Home   string // TALARIA_HOME (config.yaml, state.db)
	WS     string // the workspace serve was started with
	Model  *fakellm.Server
	Tokens map[string]string // principal → secret
	cmd    *exec.Cmd
	stdout *testenv.Buffer
	stderr *testenv.Buffer
	done   chan struct{}
	env    []string
}

var servingOn = regexp.MustCompile(`serving on (\S+)`)

// startServe starts a real `talaria serve` on a free loopback port. The
// process is killed when the test ends.
func startServe(t testing.TB, o options) *server {
	t.Helper()
	model := fakellm.New()
	t.Cleanup(model.Close)
	if o.Model != nil {
		model.SetDefault(o.Model)
	} else {
		model.SetDefault(func(fakellm.Request) fakellm.Step { return fakellm.Text("ok") })
	}
	home := o.Home
	if home == "" {
		home = t.TempDir()
	}
	s := &server{t: t, Home: home, WS: t.TempDir(), Model: model, Tokens: map[string]string{},
		stdout: &testenv.Buffer{}, stderr: &testenv.Buffer{}, done: make(chan struct{})}
	cfg := "database:\n  path: " + filepath.Join(s.Home, "state.db") + "\n" + o.Config
	if err := os.WriteFile(filepath.Join(s.Home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	s.env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + s.Home,
		"TMPDIR=" + os.TempDir(),
		"TALARIA_HOME=" + s.Home,
	}, o.Env...)
	for _, p := range o.Principals {
		out, err := s.cli("serve", "token", "create", p, "--principal", p)
		if err != nil {
			t.Fatalf("serve token create %s: %v\n%s", p, err, out)
		}
		s.Tokens[p] = strings.TrimSpace(out)
	}
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--drain", "1s",
		"--api", "openai", "--base-url", model.OpenAIBaseURL(), "--model", "m", "--workspace", s.WS}, o.Args...)
	s.cmd = exec.Command(bin, args...)
	s.cmd.Env, s.cmd.Dir = s.env, s.WS
	s.cmd.Stdout, s.cmd.Stderr = s.stdout, s.stderr
	s.cmd.WaitDelay = 5 * time.Second
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start serve: %v", err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(s.stop)
	if !testenv.Eventually(30*time.Second, func() bool { return servingOn.MatchString(s.stderr.String()) || s.exited() }) || s.exited() {
		t.Fatalf("serve did not start:\n%s", s.stderr)
	}
	s.URL = servingOn.FindStringSubmatch(s.stderr.String())[1]
	return s
}

// admin makes an admin-scoped token (principal "ops"), the kind that may
// read /metrics, and returns its secret.
func (s *server) admin() string {
	s.t.Helper()
	if tok, ok := s.Tokens["ops"]; ok {
		return tok
	}
	out, err := s.cli("serve", "token", "create", "ops", "--admin")
	if err != nil {
		s.t.Fatalf("serve token create ops --admin: %v\n%s", err, out)
	}
	s.Tokens["ops"] = strings.TrimSpace(out)
	return s.Tokens["ops"]
}

// cli runs another talaria command with the server's home and environment
// and returns its combined output.
func (s *server) cli(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = s.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Stderr is what the server printed so far (its log).
func (s *server) Stderr() string { return s.stderr.String() }

func (s *server) stop() {
	if s.exited() {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// do sends one request with token (none when empty) and returns the status
// and the whole body.
func (s *server) do(method, path, token, body string) (int, []byte) {
	s.t.Helper()
	resp, err := s.request(context.Background(), method, path, token, body)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// request sends one request and returns the response unread (the caller
// closes its body).
func (s *server) request(ctx context.Context, method, path, token, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.URL+strings.TrimPrefix(path, "/"), strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return http.DefaultClient.Do(req)
}
