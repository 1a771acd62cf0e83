//go:build unix

package multinode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/gateway"
	"github.com/talaria-agent/talaria/gateway/client"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/pgtest"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/postgres"
)

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	if binary.dir != "" {
		_ = os.RemoveAll(binary.dir)
	}
	os.Exit(code)
}

// binary is the talaria binary, built on first use (only when PostgreSQL
// is there, so a machine without it skips without building).
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func talariaBin(t testing.TB) string {
	t.Helper()
	binary.once.Do(func() {
		binary.dir, binary.err = os.MkdirTemp("", "talaria-multinode-")
		if binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "talaria")
		args := []string{"build", "-o", binary.path}
		if raceBuild {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, "github.com/talaria-agent/talaria/cmd/talaria")...).CombinedOutput()
		if err != nil {
			binary.err = fmt.Errorf("go build talaria: %v\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// cluster is several serve nodes on one fresh PostgreSQL schema.
type cluster struct {
	t      testing.TB
	dsn    string
	home   string
	ws     string
	srv    *fakellm.Server
	reader *postgres.Store
	token  string
	ttl    time.Duration
	nodes  []*node
}

// node is one `talaria serve` process.
type node struct {
	i      int
	cmd    *exec.Cmd
	url    string // http://127.0.0.1:port/ (with the slash)
	stderr *testenv.Buffer
	done   chan struct{}
	tracer *os.Process // strace holding the node (testenv.HoldRenames), killed with it
}

var servingOn = regexp.MustCompile(`serving on (\S+)`)

// newCluster starts n nodes with lease TTL ttl on a fresh schema, the
// model answering with model.
func newCluster(t testing.TB, n int, ttl time.Duration, model func(fakellm.Request) fakellm.Step) *cluster {
	t.Helper()
	return newClusterConfig(t, n, ttl, model, "")
}

// newClusterConfig is newCluster with a config.yaml (cfg) every node
// reads; "{WS}" in it names the nodes' workspace.
func newClusterConfig(t testing.TB, n int, ttl time.Duration, model func(fakellm.Request) fakellm.Step, cfg string) *cluster {
	t.Helper()
	return newClusterConfigPre(t, n, ttl, model, cfg, nil)
}

// newClusterConfigPre is newClusterConfig calling pre with the workspace
// before the nodes start.
func newClusterConfigPre(t testing.TB, n int, ttl time.Duration, model func(fakellm.Request) fakellm.Step, cfg string, pre func(ws string)) *cluster {
	t.Helper()
	return newClusterOnConfig(t, pgtest.New(t), n, ttl, model, cfg, pre) // pgtest skips (or fails under CI) without PostgreSQL
}

// newClusterOn is newCluster on the database dsn.
func newClusterOn(t testing.TB, dsn string, n int, ttl time.Duration, model func(fakellm.Request) fakellm.Step) *cluster {
	t.Helper()
	return newClusterOnConfig(t, dsn, n, ttl, model, "", nil)
}

func newClusterOnConfig(t testing.TB, dsn string, n int, ttl time.Duration, model func(fakellm.Request) fakellm.Step, cfg string, pre func(ws string)) *cluster {
	t.Helper()
	bin := talariaBin(t)
	c := &cluster{t: t, dsn: dsn, home: t.TempDir(), ws: t.TempDir(), ttl: ttl}
	if pre != nil {
		pre(c.ws)
	}
	if cfg != "" {
		// {WS}: the workspace, which a sandboxed command can see.
		cfg = strings.ReplaceAll(cfg, "{WS}", c.ws)
		if err := os.WriteFile(filepath.Join(c.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c.srv = fakellm.New()
	t.Cleanup(c.srv.Close)
	c.srv.SetDefault(model)
	if err := os.WriteFile(filepath.Join(c.ws, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", postgres.Redact(dsn), err)
	}
	t.Cleanup(func() { _ = st.Close() })
	c.reader = st
	secret, _, err := gateway.CreateToken(context.Background(), st, "tests", "tester", "")
	if err != nil {
		t.Fatal(err)
	}
	c.token = secret
	t.Cleanup(c.stopAll)
	for i := range n {
		c.nodes = append(c.nodes, c.start(bin, i))
	}
	return c
}

func (c *cluster) start(bin string, i int) *node {
	c.t.Helper()
	nd := &node{i: i, stderr: &testenv.Buffer{}, done: make(chan struct{})}
	nd.cmd = exec.Command(bin, "serve", "--api", "openai", "--base-url", c.srv.OpenAIBaseURL(), "--model", "m",
		"--workspace", c.ws, "--addr", "127.0.0.1:0", "--yes", "--drain", "2s", "--lease-ttl", c.ttl.String())
	nd.cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + c.home,
		"TMPDIR=" + os.TempDir(),
		"TALARIA_HOME=" + c.home,
		"TALARIA_DATABASE_URL=" + c.dsn,
	}
	nd.cmd.Dir = c.ws
	nd.cmd.Stdout, nd.cmd.Stderr = io.Discard, nd.stderr
	nd.cmd.WaitDelay = 5 * time.Second
	if err := nd.cmd.Start(); err != nil {
		c.t.Fatalf("start node %d: %v", i, err)
	}
	go func() {
		_ = nd.cmd.Wait()
		close(nd.done)
	}()
	if !testenv.Eventually(60*time.Second, func() bool { return servingOn.MatchString(nd.stderr.String()) || nd.exited() }) || nd.exited() {
		c.t.Fatalf("node %d did not start:\n%s", i, nd.stderr)
	}
	nd.url = servingOn.FindStringSubmatch(nd.stderr.String())[1]
	return nd
}

func (nd *node) exited() bool {
	select {
	case <-nd.done:
		return true
	default:
		return false
	}
}

// kill ends a node with SIGKILL, as a crash would.
func (nd *node) kill(t testing.TB) {
	t.Helper()
	if err := nd.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if nd.tracer != nil {
		// A thread stopped by its tracer is reaped only once the tracer
		// lets go; the pending SIGKILL ends it before its syscall runs.
		_ = nd.tracer.Kill()
	}
	<-nd.done
}

// checkLogs fails the test when a node reported a data race.
func (c *cluster) checkLogs() {
	for _, nd := range c.nodes {
		if s := nd.stderr.String(); strings.Contains(s, "WARNING: DATA RACE") {
			c.t.Errorf("node %d reported a data race:\n%s", nd.i, s)
		}
	}
}

// stopAll stops every node still running with SIGTERM (SIGKILL after a
// while), so no process outlives the test.
func (c *cluster) stopAll() {
	for _, nd := range c.nodes {
		if !nd.exited() {
			_ = nd.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, nd := range c.nodes {
		select {
		case <-nd.done:
		case <-time.After(30 * time.Second):
			_ = nd.cmd.Process.Kill()
			<-nd.done
			c.t.Errorf("node %d did not stop on SIGTERM:\n%s", nd.i, nd.stderr)
		}
	}
	c.checkLogs()
}

// call makes an API request and decodes the JSON answer into out.
func (c *cluster) call(ctx context.Context, nd *node, method, path string, body any, out any) error {
	return c.callAs(ctx, c.token, nd, method, path, body, out)
}

// callAs is call with the token tok.
func (c *cluster) callAs(ctx context.Context, tok string, nd *node, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, nd.url+strings.TrimPrefix(path, "/"), rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s on node %d: %d %s", method, path, nd.i, resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func (c *cluster) newSession(ctx context.Context, nd *node) (string, error) {
	var out struct {
		ID string `json:"id"`
	}
	err := c.call(ctx, nd, "POST", "v1/sessions", map[string]any{}, &out)
	return out.ID, err
}

// send posts a message; it returns the turn id.
func (c *cluster) send(ctx context.Context, nd *node, sid, text string) (string, error) {
	var out struct {
		TurnID string `json:"turn_id"`
	}
	err := c.call(ctx, nd, "POST", "v1/sessions/"+sid+"/messages", map[string]any{"text": text}, &out)
	return out.TurnID, err
}

// sseEvent is one received event.
type sseEvent struct {
	ID     int64
	Type   string
	TurnID string
	Data   []byte
}

// subscribe follows a session's events on a node from after (a
// Last-Event-ID), calling fn for each until it returns false or ctx ends.
func (c *cluster) subscribe(ctx context.Context, nd *node, sid string, after int64, fn func(sseEvent) bool) error {
	return c.subscribeOpen(ctx, nd, sid, after, nil, fn)
}

// subscribeOpen is subscribe calling open once the stream is open.
func (c *cluster) subscribeOpen(ctx context.Context, nd *node, sid string, after int64, open func(), fn func(sseEvent) bool) error {
	return c.subscribeAs(ctx, c.token, nd, sid, after, open, fn)
}

// subscribeAs is subscribeOpen with the token tok.
func (c *cluster) subscribeAs(ctx context.Context, tok string, nd *node, sid string, after int64, open func(), fn func(sseEvent) bool) error {
	req, err := http.NewRequestWithContext(ctx, "GET", nd.url+"v1/sessions/"+sid+"/events", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "text/event-stream")
	if after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("events on node %d: %d %s", nd.i, resp.StatusCode, b)
	}
	if open != nil {
		open()
	}
	return client.ParseSSE(bufio.NewReader(resp.Body), func(id int64, typ string, data []byte) bool {
		var head struct {
			TurnID string `json:"turn_id"`
		}
		_ = json.Unmarshal(data, &head)
		return fn(sseEvent{ID: id, Type: typ, TurnID: head.TurnID, Data: append([]byte(nil), data...)})
	})
}

// rows reads a session's stored rows.
func (c *cluster) rows(sid string) []store.Message {
	c.t.Helper()
	rows, err := c.reader.Messages(context.Background(), sid, store.MessageQuery{IncludeArchived: true})
	if err != nil {
		c.t.Fatalf("read rows: %v", err)
	}
	return rows
}

// queueDrains fails the test unless the queue is soon empty: a turn's
// message leaves it right after its turn_finished is published.
func (c *cluster) queueDrains(t testing.TB) {
	t.Helper()
	var q []store.QueuedMessage
	var err error
	if !testenv.Eventually(30*time.Second, func() bool {
		q, err = c.reader.Queued(context.Background(), "")
		return err == nil && len(q) == 0
	}) {
		t.Errorf("queue after every turn finished: %d messages (%v), want none: %+v", len(q), err, q)
	}
}

// checkWire fails the test on a malformed request (see testenv.CheckWire).
func (c *cluster) checkWire(t testing.TB) {
	t.Helper()
	testenv.CheckWire(t, c.srv)
}

// toolThenAnswer is a stateless model: a new prompt gets a read_file
// call; a tool result gets "answer: <the prompt it answers>". Cross-talk
// between turns shows in the answers.
func toolThenAnswer(latency time.Duration) func(fakellm.Request) fakellm.Step {
	return func(req fakellm.Request) fakellm.Step {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "user" {
			return fakellm.Calls(fakellm.ToolCall("read_file", `{"path":"a.txt"}`)).WithLatency(latency)
		}
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == "user" {
				return fakellm.Text("answer: " + req.Messages[i].Text).WithLatency(latency)
			}
		}
		return fakellm.Text("no prompt")
	}
}
