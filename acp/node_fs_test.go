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

type fsReport struct {
	clientReport
	FS []struct {
		Phase     string `json:"phase"`
		Method    string `json:"method"`
		Path      string `json:"path"`
		SessionID string `json:"sessionId"`
	} `json:"fs"`
	Buffers map[string]string `json:"buffers"`
}

// toolResults are the results the client was shown, by tool call id, and
// whether each failed.
func toolResults(t *testing.T, r *fsReport) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, u := range r.Updates {
		var x struct {
			SessionUpdate string `json:"sessionUpdate"`
			ToolCallID    string `json:"toolCallId"`
			Status        string `json:"status"`
			Content       []struct {
				Type    string `json:"type"`
				Content struct {
					Text string `json:"text"`
				} `json:"content"`
				Path    string  `json:"path"`
				OldText *string `json:"oldText"`
				NewText *string `json:"newText"`
			} `json:"content"`
		}
		if err := json.Unmarshal(u.Update, &x); err != nil || x.SessionUpdate != "tool_call_update" {
			continue
		}
		var b strings.Builder
		b.WriteString(x.Status + ": ")
		for _, c := range x.Content {
			switch c.Type {
			case "content":
				b.WriteString(c.Content.Text)
			case "diff":
				b.WriteString("\n[diff " + c.Path + "]")
				if c.OldText != nil {
					b.WriteString(" old=" + *c.OldText)
				}
				if c.NewText != nil {
					b.WriteString(" new=" + *c.NewText)
				}
			}
		}
		out[x.ToolCallID] = b.String()
	}
	return out
}

// TestACPEditorFileSystem: a client that offers fs/read_text_file and
// fs/write_text_file (the official SDK over an in-memory buffer map) gets
// the session's file tools: write_file lands in its buffer and not on disk,
// read_file shows the buffer's unsaved text, edit_file reads and writes the
// buffer, and a path outside the cwd is refused before the client is asked.
func TestACPEditorFileSystem(t *testing.T) {
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

	base := t.TempDir()
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	notes, secret, hello := filepath.Join(ws, "notes.txt"), filepath.Join(outside, "secret.txt"), filepath.Join(ws, "hello.txt")
	if err := os.WriteFile(notes, []byte("saved on disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("top secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	buffers, _ := json.Marshal(map[string]string{notes: "unsaved edit in the buffer\n", secret: "the editor would show this\n"})

	srv := fakellm.New()
	defer srv.Close()
	srv.Script(
		fakellm.Calls(fakellm.Call{ID: "call_write", Name: "write_file", Arguments: `{"path":"hello.txt","content":"hello from talaria\n"}`}),
		fakellm.Calls(fakellm.Call{ID: "call_read", Name: "read_file", Arguments: `{"path":"notes.txt"}`}),
		fakellm.Calls(fakellm.Call{ID: "call_outside", Name: "read_file", Arguments: `{"path":"` + secret + `"}`}),
		fakellm.Calls(fakellm.Call{ID: "call_edit", Name: "edit_file", Arguments: `{"path":"notes.txt","old_string":"unsaved edit","new_string":"edited"}`}),
		fakellm.Text("Done."),
	)
	args, _ := json.Marshal([]string{"acp", "--api", "openai", "--base-url", srv.OpenAIBaseURL(), "--model", "gpt-4.1"})
	node := exec.CommandContext(ctx, "node", "client.mjs")
	node.Dir = dir
	node.Env = append(os.Environ(), "TALARIA_BIN="+bin, "TALARIA_ARGS="+string(args), "TALARIA_WS="+ws,
		"TALARIA_FS=1", "TALARIA_BUFFERS="+string(buffers),
		"TALARIA_HOME="+t.TempDir(), "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=")
	var stderr strings.Builder
	node.Stderr = &stderr
	out, err := node.Output()
	if err != nil {
		t.Fatalf("node client: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	var r fsReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("client report: %v\n%s", err, out)
	}
	if r.Error != "" {
		t.Fatalf("client failed: %s\nagent stderr: %s", r.Error, stderr.String())
	}
	if r.Prompt.StopReason != "end_turn" {
		t.Errorf("stopReason %q, want end_turn\n%s", r.Prompt.StopReason, stderr.String())
	}
	res := toolResults(t, &r)

	// The client was asked exactly this, in this order, for this session.
	var asked []string
	for _, f := range r.FS {
		asked = append(asked, f.Method+" "+f.Path)
		if f.SessionID != r.SessionID {
			t.Errorf("fs request for session %q, want %q", f.SessionID, r.SessionID)
		}
	}
	want := []string{"write " + hello, "read " + notes, "read " + notes, "write " + notes}
	if strings.Join(asked, "\n") != strings.Join(want, "\n") {
		t.Errorf("the client was asked:\n%s\nwant:\n%s", strings.Join(asked, "\n"), strings.Join(want, "\n"))
	}

	// write_file: into the buffer, not onto the disk, after the permission.
	if r.Buffers[hello] != "hello from talaria\n" {
		t.Errorf("buffer %s = %q, want the written text", hello, r.Buffers[hello])
	}
	if _, err := os.Stat(hello); !os.IsNotExist(err) {
		t.Errorf("hello.txt is on disk (%v): the write should have gone to the editor only", err)
	}
	if len(r.Permissions) != 2 || r.Permissions[0].ToolCall.ToolCallID != "call_write" {
		t.Errorf("permissions: %+v, want write_file then edit_file", r.Permissions)
	}
	if got := res["call_write"]; !strings.HasPrefix(got, "completed") || !strings.Contains(got, "[diff "+hello+"] new=hello from talaria") {
		t.Errorf("write_file result: %q", got)
	}

	// read_file: the buffer's unsaved text, numbered like a file on disk.
	if got := res["call_read"]; !strings.HasPrefix(got, "completed") || !strings.Contains(got, "1\tunsaved edit in the buffer") {
		t.Errorf("read_file result %q, want the buffer's unsaved text", got)
	}

	// Outside the cwd: refused by Talaria, the client never asked.
	if got := res["call_outside"]; !strings.HasPrefix(got, "failed") || !strings.Contains(got, "outside the workspace") ||
		strings.Contains(got, "the editor would show this") {
		t.Errorf("read_file outside the cwd: %q, want a refusal", got)
	}

	// edit_file: buffer to buffer; the disk keeps the saved text.
	if r.Buffers[notes] != "edited in the buffer\n" {
		t.Errorf("buffer %s = %q after edit_file", notes, r.Buffers[notes])
	}
	if got := readFile(t, notes); got != "saved on disk\n" {
		t.Errorf("notes.txt on disk = %q, want it untouched", got)
	}
	if got := res["call_edit"]; !strings.HasPrefix(got, "completed") ||
		!strings.Contains(got, "old=unsaved edit in the buffer\n new=edited in the buffer\n") {
		t.Errorf("edit_file result (with its diff): %q", got)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
