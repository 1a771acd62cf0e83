//go:build unix

package hostile

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
	"github.com/talaria-agent/talaria/internal/testing/testenv"
)

// nodeFixture copies the openai-node fixture to a temp dir and installs
// its locked dependencies there with npm ci. Without node and npm the
// test is skipped, except in CI, which installs them (.ci/run).
func nodeFixture(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed; .ci/run installs it", tool)
			}
			t.Skipf("SKIPPED: %s is not installed, so the official openai Node client cannot run (CI installs it)", tool)
		}
	}
	src := filepath.Join("..", "..", "..", "gateway", "testdata", "openai-node")
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "run.mjs"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--prefer-offline")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
	return dir
}

// TestOpenAINodeClient: the official openai Node client against a real
// `talaria serve`: chat completions and responses, streamed and not, with
// usage; a wrong token; another principal's session; and a stream the
// client closes mid-answer, whose turn must be recorded interrupted.
func TestOpenAINodeClient(t *testing.T) {
	dir := nodeFixture(t)
	long := strings.Repeat("a slow answer in many pieces ", 60)
	s := startServe(t, options{Principals: []string{"alice", "bob"}, Model: func(r fakellm.Request) fakellm.Step {
		last := ""
		for _, m := range r.Messages {
			if m.Role == "user" {
				last = m.Text
			}
		}
		if strings.HasSuffix(last, "slow") {
			return fakellm.Text(long).WithChunkDelay(20 * time.Millisecond)
		}
		return fakellm.Text("echo: " + last[max(0, strings.LastIndex(last, "\n")+1):])
	}})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "run.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TALARIA_URL="+s.URL, "ALICE="+s.Tokens["alice"], "BOB="+s.Tokens["bob"])
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node run.mjs: %v\n%s\nserver:\n%s", err, stderr.String(), s.Stderr())
	}
	t.Logf("the openai Node client saw: %s", out)
	var got map[string]json.RawMessage
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node printed %q: %v", out, err)
	}
	field := func(name string, v any) {
		t.Helper()
		if err := json.Unmarshal(got[name], v); err != nil {
			t.Fatalf("%s = %s: %v", name, got[name], err)
		}
	}
	type usage struct {
		Prompt     int `json:"prompt_tokens"`
		Completion int `json:"completion_tokens"`
		Input      int `json:"input_tokens"`
		Output     int `json:"output_tokens"`
		Total      int `json:"total_tokens"`
	}
	type thrown struct {
		Thrown *struct {
			Status int    `json:"status"`
			Type   string `json:"type"`
			Code   string `json:"code"`
		} `json:"thrown"`
	}

	var models []string
	field("models", &models)
	if len(models) != 1 || !strings.HasSuffix(models[0], "/m") {
		t.Errorf("models = %s", got["models"])
	}

	var chat struct {
		Session, Content, Finish, Object string
		Usage                            usage
	}
	field("chat", &chat)
	if chat.Session == "" || chat.Content != "echo: kumquat" || chat.Finish != "stop" || chat.Object != "chat.completion" ||
		chat.Usage.Prompt <= 0 || chat.Usage.Completion <= 0 || chat.Usage.Total != chat.Usage.Prompt+chat.Usage.Completion {
		t.Errorf("chat = %s", got["chat"])
	}
	var stream struct {
		Session, Content, Finish string
		Chunks                   int
		Usage                    *usage
	}
	field("chat_stream", &stream)
	if stream.Session != chat.Session || stream.Content != "echo: again" || stream.Finish != "stop" || stream.Usage == nil || stream.Usage.Completion <= 0 {
		t.Errorf("chat_stream = %s", got["chat_stream"])
	}
	var resp struct {
		Session, ID, Text, Status string
		Usage                     usage
	}
	field("responses", &resp)
	if resp.Text != "echo: fig" || resp.Status != "completed" || resp.Usage.Input <= 0 || resp.Usage.Output <= 0 || resp.Session == chat.Session {
		t.Errorf("responses = %s", got["responses"])
	}
	var rstream struct {
		Types     []string
		Text      string
		FinalText string `json:"final_text"`
		Usage     *usage
	}
	field("responses_stream", &rstream)
	if rstream.Text != "echo: date" || rstream.FinalText != "echo: date" || rstream.Usage == nil || rstream.Usage.Output <= 0 ||
		len(rstream.Types) < 9 || rstream.Types[0] != "response.created" || rstream.Types[len(rstream.Types)-1] != "response.completed" {
		t.Errorf("responses_stream = %s", got["responses_stream"])
	}
	var helper struct{ Text, Status string }
	field("responses_helper", &helper)
	if helper.Text != "echo: elderberry" || helper.Status != "completed" {
		t.Errorf("responses_helper = %s", got["responses_helper"])
	}
	for name, want := range map[string]int{"wrong_token": 401, "other_session": 404, "other_session_responses": 404} {
		var th thrown
		field(name, &th)
		if th.Thrown == nil || th.Thrown.Status != want || th.Thrown.Type == "" {
			t.Errorf("%s = %s, want a %d error", name, got[name], want)
		}
	}
	var cut struct{ Session, Turn, First string }
	field("interrupted", &cut)
	if cut.Session == "" || cut.Turn == "" || cut.First == "" {
		t.Fatalf("interrupted = %s", got["interrupted"])
	}
	var rows string
	if !testenv.Eventually(15*time.Second, func() bool {
		code, b := s.do("GET", "/v1/sessions/"+cut.Session+"/messages", s.Tokens["alice"], "")
		rows = string(b)
		var list struct {
			Messages []struct {
				TurnID string `json:"turn_id"`
				Kind   string `json:"kind"`
			} `json:"messages"`
		}
		if code != 200 || json.Unmarshal(b, &list) != nil {
			return false
		}
		for _, m := range list.Messages {
			if m.TurnID == cut.Turn && m.Kind == "interrupted" {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("turn %s was not recorded interrupted: %s", cut.Turn, rows)
	}
	// The header and previous_response_id continued their sessions; each
	// other request made one: chat, responses, the helper's, the cut one.
	code, b := s.do("GET", "/v1/sessions?limit=10", s.Tokens["alice"], "")
	if code != 200 || strings.Count(string(b), `"id"`) != 4 {
		t.Errorf("alice's sessions = %d %s", code, b)
	}
}
