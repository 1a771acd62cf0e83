package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/mcpserver"
)

// host is the official go-sdk client driving a real `talaria mcp serve`
// process against the scripted model server.
type host struct {
	t    *testing.T
	srv  *fakellm.Server
	ws   string
	sess *sdk.ClientSession

	mu       sync.Mutex
	progress []string
	started  chan struct{}
}

func buildTalaria(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("TALARIA_TEST_BINARY"); b != "" {
		return b // a binary built from this tree already (local iteration)
	}
	bin := filepath.Join(t.TempDir(), "talaria")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/talaria-agent/talaria/cmd/talaria").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func startHost(t *testing.T, bin string, extra ...string) *host {
	t.Helper()
	h := &host{t: t, srv: fakellm.New(), ws: t.TempDir(), started: make(chan struct{}, 16)}
	t.Cleanup(h.srv.Close)
	args := append([]string{"mcp", "serve", "--api", "openai", "--base-url", h.srv.OpenAIBaseURL(), "--model", "gpt-4.1", "--workspace", h.ws}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TALARIA_HOME="+t.TempDir(), "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=")
	cmd.Stderr = os.Stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "talaria-test-host", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			h.mu.Lock()
			h.progress = append(h.progress, req.Params.Message)
			h.mu.Unlock()
			if strings.HasPrefix(req.Params.Message, "turn started") {
				h.started <- struct{}{}
			}
		},
	})
	sess, err := client.Connect(t.Context(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to talaria mcp serve: %v", err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	h.sess = sess
	return h
}

func (h *host) call(ctx context.Context, name string, args map[string]any) (*sdk.CallToolResult, error) {
	return h.sess.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args, Meta: sdk.Meta{"progressToken": name + "-token"}})
}

func (h *host) runTurn(args map[string]any) mcpserver.RunTurnResult {
	h.t.Helper()
	res, err := h.call(h.t.Context(), "run_turn", args)
	if err != nil {
		h.t.Fatalf("run_turn: %v", err)
	}
	var out mcpserver.RunTurnResult
	decode(h.t, res, &out)
	if res.IsError {
		h.t.Logf("run_turn said error: %+v", out)
	}
	return out
}

func decode(t *testing.T, res *sdk.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

func TestRunTurnTwiceThenGetSession(t *testing.T) {
	h := startHost(t, buildTalaria(t))
	h.srv.Script(fakellm.Calls(fakellm.ToolCall("list_dir", `{"path":"."}`)), fakellm.Text("first answer"), fakellm.Text("second answer"))
	if err := os.WriteFile(filepath.Join(h.ws, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}

	one := h.runTurn(map[string]any{"prompt": "look around"})
	if one.Exit != "completed" || one.Answer != "first answer" || one.SessionID == "" || one.ToolCalls != 1 {
		t.Fatalf("first run_turn: %+v", one)
	}
	two := h.runTurn(map[string]any{"prompt": "and then?", "session_id": one.SessionID})
	if two.Exit != "completed" || two.Answer != "second answer" || two.SessionID != one.SessionID {
		t.Fatalf("second run_turn: %+v (want session %s)", two, one.SessionID)
	}
	// The second turn's request carried the first turn: one durable session.
	reqs := h.srv.Requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(string(last.Body), "look around") || !strings.Contains(string(last.Body), "first answer") {
		t.Errorf("the second turn's request lacks the first turn:\n%s", last.Body)
	}
	h.mu.Lock()
	prog := strings.Join(h.progress, "\n")
	h.mu.Unlock()
	if !strings.Contains(prog, "turn started") || !strings.Contains(prog, "running list_dir") {
		t.Errorf("progress notifications: %q", prog)
	}

	res, err := h.call(t.Context(), "get_session", map[string]any{"session_id": one.SessionID})
	if err != nil || res.IsError {
		t.Fatalf("get_session: %v %+v", err, res)
	}
	var d mcpserver.SessionDetail
	decode(t, res, &d)
	var texts []string
	for _, m := range d.Messages {
		texts = append(texts, m.Role+":"+m.Text)
	}
	got := strings.Join(texts, "|")
	for _, want := range []string{"user:look around", "assistant:first answer", "user:and then?", "assistant:second answer"} {
		if !strings.Contains(got, want) {
			t.Errorf("get_session lacks %q: %s", want, got)
		}
	}
	if d.Workspace != h.ws || d.InputTokens == 0 {
		t.Errorf("get_session: workspace %q (want %q), input tokens %d", d.Workspace, h.ws, d.InputTokens)
	}

	res, err = h.call(t.Context(), "list_sessions", map[string]any{})
	if err != nil || res.IsError {
		t.Fatalf("list_sessions: %v %+v", err, res)
	}
	var l struct{ Sessions []mcpserver.SessionSummary }
	decode(t, res, &l)
	if len(l.Sessions) != 1 || l.Sessions[0].SessionID != one.SessionID {
		t.Errorf("list_sessions: %+v", l.Sessions)
	}
	res, err = h.call(t.Context(), "get_session", map[string]any{"session_id": "nope"})
	if err != nil || !res.IsError {
		t.Errorf("get_session of an unknown id: %v %+v, want a tool error", err, res)
	}
}

// TestCancelInterruptsTheTurn: the host cancels a run_turn while the model
// is still thinking; the turn is interrupted (its lease released, its
// session consistent), so the next run_turn on the session runs at once.
func TestCancelInterruptsTheTurn(t *testing.T) {
	h := startHost(t, buildTalaria(t))
	h.srv.Script(fakellm.Text("hello"), fakellm.Text("too late").WithLatency(time.Minute), fakellm.Text("after the cancel"))
	r := h.runTurn(map[string]any{"prompt": "hi"})
	if r.Exit != "completed" {
		t.Fatalf("first turn: %+v", r)
	}
	<-h.started // the first call's: the next one is the cancelled call's
	first := r.SessionID

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := h.call(ctx, "run_turn", map[string]any{"prompt": "take your time", "session_id": first})
		done <- err
	}()
	select {
	case <-h.started:
	case <-time.After(time.Minute):
		t.Fatal("no progress notification from run_turn")
	}
	if !h.srv.Wait(2, 30*time.Second) {
		t.Fatal("the turn never called the model")
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled call returned no error")
	}
	start := time.Now()
	after := h.runTurn(map[string]any{"prompt": "still there?", "session_id": first})
	if after.Exit != "completed" || after.Answer != "after the cancel" {
		t.Fatalf("run_turn after the cancel: %+v", after)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the next turn waited %s: the cancelled turn held the session", took)
	}
	res, err := h.call(t.Context(), "get_session", map[string]any{"session_id": first})
	if err != nil {
		t.Fatal(err)
	}
	var d mcpserver.SessionDetail
	decode(t, res, &d)
	var kinds []string
	for _, m := range d.Messages {
		kinds = append(kinds, m.Role+"/"+m.Kind+":"+m.Text)
	}
	got := strings.Join(kinds, "|")
	if !strings.Contains(got, "take your time") || strings.Contains(got, "too late") {
		t.Errorf("session after the cancel: %s", got)
	}
}

// TestChangesRefusedWithoutYes documents approvals: an MCP host cannot be
// asked, so tools that change things are refused and the model told why.
func TestChangesRefusedWithoutYes(t *testing.T) {
	h := startHost(t, buildTalaria(t))
	h.srv.Script(fakellm.Calls(fakellm.ToolCall("write_file", `{"path":"x.txt","content":"x"}`)), fakellm.Text("could not write"))
	r := h.runTurn(map[string]any{"prompt": "write x.txt"})
	if r.Exit != "completed" {
		t.Fatalf("run_turn: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(h.ws, "x.txt")); err == nil {
		t.Fatal("x.txt was written without --yes")
	}
	reqs := h.srv.Requests()
	if !strings.Contains(string(reqs[len(reqs)-1].Body), "only runs such tools when started with --yes") {
		t.Errorf("the model was not told why:\n%s", reqs[len(reqs)-1].Body)
	}
}
