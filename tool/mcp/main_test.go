package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/testing/mcptest"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/tool/mcp"
)

// serverBin is the mcptest server, built once for the package's tests.
var serverBin string

func TestMain(m *testing.M) {
	testenv.MainWithBuild(m, "github.com/talaria-agent/talaria/internal/testing/mcptest/mcptestserver", &serverBin)
}

// statusLines collects the manager's status lines.
type statusLines struct {
	mu    sync.Mutex
	lines []string
}

func (s *statusLines) add(l string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, l)
}

func (s *statusLines) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lines)
}

func (s *statusLines) count(sub string) int {
	n := 0
	for _, l := range s.all() {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

// stdio is the config of the test server as a stdio server named name,
// writing its files into dir.
func stdio(name, dir string) mcp.ServerConfig {
	return mcp.ServerConfig{
		Name: name, Command: serverBin,
		Env: map[string]string{mcptest.DirEnv: dir, mcptest.TokenEnv: "${TEST_TOKEN}"},
	}
}

type fixture struct {
	m      *mcp.Manager
	status *statusLines
	dir    string
}

func newManager(t testing.TB, edit func(*mcp.Options), servers ...mcp.ServerConfig) *fixture {
	t.Helper()
	f := &fixture{status: &statusLines{}, dir: t.TempDir()}
	for i := range servers {
		if servers[i].Env != nil && servers[i].Env[mcptest.DirEnv] == "" {
			servers[i].Env[mcptest.DirEnv] = f.dir
		}
	}
	opts := mcp.Options{
		Servers: servers, Status: f.status.add, RestartBackoff: 20 * time.Millisecond, Grace: 500 * time.Millisecond,
		Getenv: func(k string) string {
			if k == "TEST_TOKEN" {
				return "s3cret"
			}
			return ""
		},
	}
	if edit != nil {
		edit(&opts)
	}
	m, err := mcp.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	t.Cleanup(m.Close)
	return f
}

func (f *fixture) session(t testing.TB) *mcp.Session {
	t.Helper()
	s, err := f.m.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func find(t testing.TB, tools []tool.Tool, name string) tool.Tool {
	t.Helper()
	for _, x := range tools {
		if x.Info().Name == name {
			return x
		}
	}
	t.Fatalf("no tool %s among %v", name, names(tools))
	return nil
}

func names(tools []tool.Tool) []string {
	var out []string
	for _, x := range tools {
		out = append(out, x.Info().Name)
	}
	return out
}

func call(t *testing.T, ctx context.Context, x tool.Tool, args string) tool.Result {
	t.Helper()
	res, err := x.Run(ctx, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s: Run returned an error (faults must be results): %v", x.Info().Name, err)
	}
	return res
}

// httpServer starts the test server over streamable HTTP on loopback,
// requiring token as a bearer token, and returns its URL.
func httpServer(t *testing.T, dir, token string, flags ...string) (url string, cmd *exec.Cmd) {
	t.Helper()
	cmd = exec.Command(serverBin, append([]string{"-http", "127.0.0.1:0"}, flags...)...)
	cmd.Env = append(os.Environ(), mcptest.DirEnv+"="+dir, mcptest.TokenEnv+"="+token)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read URL: %v", err)
	}
	return strings.TrimSpace(line), cmd
}
