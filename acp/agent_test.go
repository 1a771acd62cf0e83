package acp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/acp"
	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/tool/builtin"
	"github.com/talaria-agent/talaria/tool/sandbox"
)

// editor is an in-process ACP client: it sends requests line by line and
// answers permission requests with answer.
type editor struct {
	t      *testing.T
	env    *testenv.Env
	in     *io.PipeWriter
	out    *bufio.Scanner
	id     int
	answer string // optionId for permission requests; "" cancels
	notes  []map[string]any
	asked  []map[string]any
}

func newEditor(t *testing.T) *editor { t.Helper(); return newEditorWith(t, nil) }

// newEditorWith is newEditor with the server's options adjusted by tweak
// (the built-in tools get w's mode as their sandbox policy when set).
func newEditorWith(t *testing.T, tweak func(*acp.Options)) *editor {
	t.Helper()
	env := testenv.New(t, testenv.Options{})
	opt := acp.Options{
		Store: env.Store,
		Open: func(_ context.Context, w acp.Workspace) (*agent.Agent, func(), error) {
			cfg := env.Config
			bo := builtin.Options{Root: w.Cwd, TextReader: w.TextReader, TextWriter: w.TextWriter}
			if w.Mode != "" {
				bo.Sandbox = &sandbox.Policy{Mode: w.Mode, Workspace: w.Cwd}
			}
			tools, err := builtin.New(bo)
			if err != nil {
				return nil, nil, err
			}
			cfg.Tools, cfg.Workspace, cfg.Approver = tools, w.Cwd, w.Approver
			ag, err := agent.New(cfg)
			return ag, func() {}, err
		},
		Window:  func(string) int64 { return 100000 },
		Version: "test",
	}
	if tweak != nil {
		tweak(&opt)
	}
	srv := acp.NewServer(opt)
	r1, w1 := io.Pipe()
	r2, w2 := io.Pipe()
	done := make(chan struct{})
	go func() { _ = srv.Serve(context.Background(), r1, w2); _ = w2.Close(); close(done) }()
	t.Cleanup(func() { _ = w1.Close(); <-done })
	e := &editor{t: t, env: env, in: w1, out: bufio.NewScanner(r2)}
	e.out.Buffer(make([]byte, 1<<20), 8<<20)
	return e
}

// call sends a request and returns its result or error object, answering
// the agent's permission requests and keeping its notifications meanwhile.
func (e *editor) call(method string, params any) (result json.RawMessage, errObj *acp.Error) {
	e.t.Helper()
	e.id++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": e.id, "method": method, "params": params})
	if _, err := e.in.Write(append(b, '\n')); err != nil {
		e.t.Fatal(err)
	}
	for e.out.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params map[string]any  `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *acp.Error      `json:"error"`
		}
		if err := json.Unmarshal(e.out.Bytes(), &m); err != nil {
			e.t.Fatalf("bad line %q: %v", e.out.Text(), err)
		}
		switch {
		case m.Method == acp.MethodSessionUpdate:
			e.notes = append(e.notes, m.Params)
		case m.Method == acp.MethodRequestPermission:
			e.asked = append(e.asked, m.Params)
			outcome := map[string]any{"outcome": "cancelled"}
			if e.answer != "" {
				outcome = map[string]any{"outcome": "selected", "optionId": e.answer}
			}
			rb, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"outcome": outcome}})
			if _, err := e.in.Write(append(rb, '\n')); err != nil {
				e.t.Fatal(err)
			}
		case string(m.ID) == fmt.Sprint(e.id):
			return m.Result, m.Error
		}
	}
	e.t.Fatalf("connection ended: %v", e.out.Err())
	return nil, nil
}

func (e *editor) mustCall(method string, params any) json.RawMessage {
	e.t.Helper()
	r, err := e.call(method, params)
	if err != nil {
		e.t.Fatalf("%s: %v", method, err)
	}
	return r
}

func (e *editor) init() {
	e.mustCall("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
}

func (e *editor) newSession() string {
	var s struct{ SessionID string }
	_ = json.Unmarshal(e.mustCall("session/new", map[string]any{"cwd": e.env.Workspace, "mcpServers": []any{}}), &s)
	return s.SessionID
}

func TestMethodErrors(t *testing.T) {
	e := newEditor(t)
	if _, err := e.call("session/new", map[string]any{"cwd": e.env.Workspace, "mcpServers": []any{}}); err == nil || err.Code != acp.CodeInvalidRequest {
		t.Fatalf("session/new before initialize: %v", err)
	}
	for _, v := range []any{"1", 1.5, -1, nil} {
		if _, err := e.call("initialize", map[string]any{"protocolVersion": v}); err == nil || err.Code != acp.CodeInvalidParams {
			t.Errorf("initialize with protocolVersion %v: %v, want invalid params", v, err)
		}
	}
	// A newer version than ours is answered with ours.
	var ir struct{ ProtocolVersion int }
	_ = json.Unmarshal(e.mustCall("initialize", map[string]any{"protocolVersion": 7}), &ir)
	if ir.ProtocolVersion != acp.ProtocolVersion {
		t.Errorf("negotiated %d, want %d", ir.ProtocolVersion, acp.ProtocolVersion)
	}
	sid := e.newSession()
	ws := e.env.Workspace
	tests := []struct {
		name   string
		method string
		params any
		code   int
	}{
		{"unknown method", "session/fly", map[string]any{}, acp.CodeMethodNotFound},
		{"authenticate: no methods", "authenticate", map[string]any{"methodId": "x"}, acp.CodeInvalidParams},
		{"new: relative cwd", "session/new", map[string]any{"cwd": "rel/dir", "mcpServers": []any{}}, acp.CodeInvalidParams},
		{"new: missing cwd", "session/new", map[string]any{"cwd": filepath.Join(ws, "nope"), "mcpServers": []any{}}, acp.CodeInvalidParams},
		{"new: no params", "session/new", nil, acp.CodeInvalidParams},
		{"new: stdio server without command", "session/new", map[string]any{"cwd": ws, "mcpServers": []any{map[string]any{"name": "x", "args": []any{}, "env": []any{}}}}, acp.CodeInvalidParams},
		{"new: http server without url", "session/new", map[string]any{"cwd": ws, "mcpServers": []any{map[string]any{"type": "http", "name": "x", "headers": []any{}}}}, acp.CodeInvalidParams},
		{"load: unknown session", "session/load", map[string]any{"sessionId": "s-nope", "cwd": ws, "mcpServers": []any{}}, acp.CodeNotFound},
		{"load: no id", "session/load", map[string]any{"cwd": ws, "mcpServers": []any{}}, acp.CodeInvalidParams},
		{"list: bad cursor", "session/list", map[string]any{"cursor": "zz"}, acp.CodeInvalidParams},
		{"prompt: session not open", "session/prompt", map[string]any{"sessionId": "s-nope", "prompt": []any{map[string]any{"type": "text", "text": "hi"}}}, acp.CodeNotFound},
		{"prompt: empty", "session/prompt", map[string]any{"sessionId": sid, "prompt": []any{}}, acp.CodeInvalidParams},
		{"prompt: audio", "session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "audio", "data": "", "mimeType": "audio/wav"}}}, acp.CodeInvalidParams},
		{"prompt: bad image", "session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "image", "data": "!!", "mimeType": "image/png"}}}, acp.CodeInvalidParams},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.call(tc.method, tc.params)
			if err == nil || err.Code != tc.code {
				t.Fatalf("%s: error %v, want code %d", tc.method, err, tc.code)
			}
		})
	}
}

func (e *editor) updates(kind string) []map[string]any {
	var out []map[string]any
	for _, n := range e.notes {
		u := n["update"].(map[string]any)
		if u["sessionUpdate"] == kind {
			out = append(out, u)
		}
	}
	return out
}

func TestPermissionRejectedAndAllowAlways(t *testing.T) {
	e := newEditor(t)
	e.init()
	sid := e.newSession()
	e.env.Srv.Script(
		fakellm.Calls(fakellm.ToolCall("write_file", `{"path":"a.txt","content":"A"}`)), fakellm.Text("refused, fine"),
		fakellm.Calls(fakellm.ToolCall("write_file", `{"path":"b.txt","content":"B"}`)), fakellm.Text("wrote b"),
		fakellm.Calls(fakellm.ToolCall("write_file", `{"path":"c.txt","content":"C"}`)), fakellm.Text("wrote c"),
	)
	prompt := func(text string) string {
		var r struct{ StopReason string }
		_ = json.Unmarshal(e.mustCall("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{acp.TextBlock(text)}}), &r)
		return r.StopReason
	}
	e.answer = acp.RejectOnce
	if r := prompt("write a"); r != "end_turn" {
		t.Fatalf("stop reason %q", r)
	}
	if _, err := os.Stat(filepath.Join(e.env.Workspace, "a.txt")); err == nil {
		t.Fatal("a.txt written although the editor rejected it")
	}
	if u := e.updates("tool_call_update"); len(u) != 1 || u[0]["status"] != "failed" {
		t.Fatalf("tool_call_update after a rejection: %v", u)
	}
	e.answer = acp.AllowAlways
	prompt("write b")
	e.answer = "" // not asked again: allowed for the session
	prompt("write c")
	if len(e.asked) != 2 {
		t.Errorf("asked %d times, want 2 (allow_always covers the third call)", len(e.asked))
	}
	for _, f := range []string{"b.txt", "c.txt"} {
		if _, err := os.Stat(filepath.Join(e.env.Workspace, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if u := e.updates("usage_update"); len(u) != 3 {
		t.Errorf("usage_update sent %d times, want once a turn", len(u))
	}
}

func TestProviderFailureIsAnErrorWithTheExit(t *testing.T) {
	e := newEditor(t)
	e.init()
	sid := e.newSession()
	e.env.Srv.Script(fakellm.HTTPError(400, "invalid_request_error", "bad model name"))
	_, err := e.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{acp.TextBlock("hi")}})
	if err == nil || err.Code != acp.CodeInternalError {
		t.Fatalf("a failed turn: %v, want an internal error", err)
	}
	data, _ := json.Marshal(err.Data)
	if !strings.Contains(string(data), `"exit":"failed"`) || err.Message == "" {
		t.Errorf("error %q data %s: want the explanation and exit", err.Message, data)
	}
}
