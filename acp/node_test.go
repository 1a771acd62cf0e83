package acp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// needNode returns the path of node and npm, or skips loudly outside CI;
// in CI (.ci/run installs them) their absence fails the test.
func needNode(t *testing.T) {
	t.Helper()
	for _, name := range []string{"node", "npm"} {
		if _, err := exec.LookPath(name); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is required in CI: %v", name, err)
			}
			t.Skipf("SKIPPED: %s not found; the ACP client test needs Node 20 and npm (CI installs them)", name)
		}
	}
}

// buildTalaria builds the talaria binary into a temporary directory.
func buildTalaria(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("TALARIA_TEST_BINARY"); b != "" {
		return b // a binary built from this tree already (local iteration)
	}
	bin := filepath.Join(t.TempDir(), "talaria")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/talaria-agent/talaria/cmd/talaria")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

type seenUpdate struct {
	Phase  string          `json:"phase"`
	Update json.RawMessage `json:"update"`
}

type clientReport struct {
	Initialize struct {
		ProtocolVersion   int `json:"protocolVersion"`
		AgentCapabilities struct {
			LoadSession bool `json:"loadSession"`
		} `json:"agentCapabilities"`
	} `json:"initialize"`
	SessionID   string       `json:"sessionId"`
	Updates     []seenUpdate `json:"updates"`
	Permissions []struct {
		Phase    string `json:"phase"`
		ToolCall struct {
			ToolCallID string `json:"toolCallId"`
			Title      string `json:"title"`
			Kind       string `json:"kind"`
		} `json:"toolCall"`
		Options []string `json:"options"`
	} `json:"permissions"`
	Prompt    struct{ StopReason string } `json:"prompt"`
	Cancelled struct{ StopReason string } `json:"cancelled"`
	List      struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
			Cwd       string `json:"cwd"`
		} `json:"sessions"`
	} `json:"list"`
	MissingError *struct {
		Code int `json:"code"`
	} `json:"missingError"`
	Error    string `json:"error"`
	ExitCode int    `json:"exitCode"`
}

type update struct {
	SessionUpdate string `json:"sessionUpdate"`
	Content       json.RawMessage
	ToolCallID    string `json:"toolCallId"`
	Status        string `json:"status"`
	Kind          string `json:"kind"`
}

func (r *clientReport) updates(t *testing.T, phase string) []update {
	t.Helper()
	var out []update
	for _, u := range r.Updates {
		if u.Phase != phase {
			continue
		}
		var x update
		if err := json.Unmarshal(u.Update, &x); err != nil {
			t.Fatal(err)
		}
		out = append(out, x)
	}
	return out
}

func raw(r *clientReport, phase string) string {
	var b strings.Builder
	for _, u := range r.Updates {
		if u.Phase == phase {
			b.Write(u.Update)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// TestACPWithOfficialTypeScriptClient drives the built `talaria acp` with
// @agentclientprotocol/sdk (the official client, from a lock file) against
// the scripted model server: initialize, session/new, a prompt whose
// write_file call the client approves, a second prompt cancelled while it
// streams, session/load replaying the history, session/list.
func TestACPWithOfficialTypeScriptClient(t *testing.T) {
	needNode(t)
	dir, err := filepath.Abs("testdata/node")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	npm := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	npm.Dir = dir
	if out, err := npm.CombinedOutput(); err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
	bin := buildTalaria(t)

	srv := fakellm.New()
	defer srv.Close()
	srv.Script(
		fakellm.Calls(fakellm.ToolCall("write_file", `{"path":"hello.txt","content":"hello from talaria\n"}`)),
		fakellm.Text("I wrote hello.txt."),
		fakellm.Text("Once upon a time there was a very long story that never ends because it is cancelled").WithChunkDelay(300*time.Millisecond),
	)
	ws := t.TempDir()
	args, _ := json.Marshal([]string{"acp", "--api", "openai", "--base-url", srv.OpenAIBaseURL(), "--model", "gpt-4.1"})
	node := exec.CommandContext(ctx, "node", "client.mjs")
	node.Dir = dir
	node.Env = append(os.Environ(), "TALARIA_BIN="+bin, "TALARIA_ARGS="+string(args), "TALARIA_WS="+ws,
		"TALARIA_HOME="+t.TempDir(), "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=")
	var stderr strings.Builder
	node.Stderr = &stderr
	out, err := node.Output()
	if err != nil {
		t.Fatalf("node client: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	var r clientReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("client report: %v\n%s", err, out)
	}
	if r.Error != "" {
		t.Fatalf("client failed: %s\nagent stderr: %s", r.Error, stderr.String())
	}
	if r.ExitCode != 0 {
		t.Errorf("talaria acp exited %d after stdin closed, want 0\n%s", r.ExitCode, stderr.String())
	}
	if r.Initialize.ProtocolVersion != 1 || !r.Initialize.AgentCapabilities.LoadSession {
		t.Errorf("initialize: %+v", r.Initialize)
	}

	// The prompt: permission asked once, for write_file, and granted.
	if len(r.Permissions) != 1 || r.Permissions[0].ToolCall.Kind != "edit" || !strings.Contains(r.Permissions[0].ToolCall.Title, "hello.txt") {
		t.Fatalf("permission requests: %+v", r.Permissions)
	}
	if got, err := os.ReadFile(filepath.Join(ws, "hello.txt")); err != nil || string(got) != "hello from talaria\n" {
		t.Errorf("hello.txt = %q, %v: the approved write did not happen in the session's cwd", got, err)
	}
	if r.Prompt.StopReason != "end_turn" {
		t.Errorf("first prompt stopReason %q, want end_turn", r.Prompt.StopReason)
	}
	var started, done bool
	for _, u := range r.updates(t, "prompt") {
		switch {
		case u.SessionUpdate == "tool_call" && u.ToolCallID == r.Permissions[0].ToolCall.ToolCallID && u.Kind == "edit":
			started = true
		case u.SessionUpdate == "tool_call_update" && u.ToolCallID == r.Permissions[0].ToolCall.ToolCallID && u.Status == "completed":
			done = true
		}
	}
	promptRaw := raw(&r, "prompt")
	if !started || !done || !strings.Contains(promptRaw, `"type":"diff"`) || !strings.Contains(promptRaw, `"newText":"hello from talaria\n"`) {
		t.Errorf("tool call updates incomplete (started %v, completed %v, diff shown?):\n%s", started, done, promptRaw)
	}
	if !strings.Contains(promptRaw, `"agent_message_chunk"`) || !strings.Contains(promptRaw, "I wrote") {
		t.Errorf("no agent_message_chunk with the answer:\n%s", promptRaw)
	}

	// The cancelled prompt.
	if r.Cancelled.StopReason != "cancelled" {
		t.Errorf("cancelled prompt stopReason %q, want cancelled", r.Cancelled.StopReason)
	}
	if strings.Contains(raw(&r, "cancel"), "never ends") {
		t.Errorf("the whole story streamed: the cancel did not stop the turn")
	}

	// session/load replays what happened.
	loadRaw := raw(&r, "load")
	for _, want := range []string{`"user_message_chunk"`, "write hello.txt please", `"tool_call"`, "I wrote hello.txt.", "now tell me a long story"} {
		if !strings.Contains(loadRaw, want) {
			t.Errorf("session/load replay lacks %s:\n%s", want, loadRaw)
		}
	}
	found := false
	for _, s := range r.List.Sessions {
		if s.SessionID == r.SessionID && s.Cwd == ws {
			found = true
		}
	}
	if !found {
		t.Errorf("session/list = %+v, want %s in %s", r.List.Sessions, r.SessionID, ws)
	}
	if r.MissingError == nil || r.MissingError.Code != -32002 {
		t.Errorf("session/load of an unknown id: %+v, want error -32002", r.MissingError)
	}
}
