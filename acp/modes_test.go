package acp_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/talaria-agent/talaria/acp"
	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/tool/sandbox"
)

func TestSessionModes(t *testing.T) {
	tests := []struct {
		configured string
		want       []string // the modes offered
	}{
		{"workspace-write", []string{"read-only", "workspace-write"}},
		{"read-only", []string{"read-only"}},
		{"off", []string{"read-only", "workspace-write", "off"}},
		{"", nil}, // no modes: session/set_mode is not offered
	}
	for _, tc := range tests {
		t.Run("configured "+tc.configured, func(t *testing.T) {
			e := newEditorWith(t, func(o *acp.Options) { o.SandboxMode = tc.configured })
			e.init()
			var r acp.NewSessionResponse
			_ = json.Unmarshal(e.mustCall("session/new", map[string]any{"cwd": e.env.Workspace, "mcpServers": []any{}}), &r)
			var got []string
			if r.Modes != nil {
				for _, m := range r.Modes.AvailableModes {
					got = append(got, m.ID)
				}
				if r.Modes.CurrentModeID != tc.configured {
					t.Errorf("current mode %q, want %q", r.Modes.CurrentModeID, tc.configured)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("modes %v, want %v", got, tc.want)
			}
			wider := "off"
			if tc.configured == "off" {
				wider = "no-such-mode"
			}
			code := acp.CodeInvalidParams
			if tc.configured == "" {
				code = acp.CodeMethodNotFound
			}
			if _, err := e.call("session/set_mode", map[string]any{"sessionId": r.SessionID, "modeId": wider}); err == nil || err.Code != code {
				t.Errorf("set_mode %q: %v, want code %d", wider, err, code)
			}
		})
	}
}

// TestSetModeReadOnly: switching a session to read-only reopens its agent
// in that mode; the same session then cannot write, not even through the
// editor's file system, and the editor is not asked.
func TestSetModeReadOnly(t *testing.T) {
	var mu sync.Mutex
	var opened []sandbox.Mode
	e := newEditorWith(t, func(o *acp.Options) {
		o.SandboxMode = "workspace-write"
		open := o.Open
		o.Open = func(ctx context.Context, w acp.Workspace) (*agent.Agent, func(), error) {
			mu.Lock()
			opened = append(opened, w.Mode)
			mu.Unlock()
			return open(ctx, w)
		}
	})
	e.mustCall("initialize", map[string]any{"protocolVersion": 1,
		"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": true, "writeTextFile": true}}})
	sid := e.newSession()
	if _, err := e.call("session/set_mode", map[string]any{"sessionId": "s-nope", "modeId": "read-only"}); err == nil || err.Code != acp.CodeNotFound {
		t.Fatalf("set_mode on a session not open: %v", err)
	}
	e.mustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "read-only"})
	e.env.Srv.Script(fakellm.Calls(fakellm.ToolCall("write_file", `{"path":"a.txt","content":"A"}`)), fakellm.Text("could not"))
	e.answer = acp.AllowOnce
	var r struct{ StopReason string }
	_ = json.Unmarshal(e.mustCall("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{acp.TextBlock("write a")}}), &r)
	if r.StopReason != "end_turn" {
		t.Fatalf("stop reason %q", r.StopReason)
	}
	mu.Lock()
	if len(opened) != 2 || opened[0] != "" || opened[1] != sandbox.ReadOnly {
		t.Errorf("agents opened with modes %q, want the configured one then read-only", opened)
	}
	mu.Unlock()
	u := e.updates("tool_call_update")
	if len(u) != 1 || u[0]["status"] != "failed" || !strings.Contains(string(mustJSON(u[0])), "refused by the sandbox") {
		t.Errorf("write_file in read-only mode: %v", u)
	}
	if _, err := os.Stat(filepath.Join(e.env.Workspace, "a.txt")); err == nil {
		t.Error("a.txt written in read-only mode")
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
