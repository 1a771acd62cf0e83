//go:build unix

package mcp_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// approver approves everything and records what it was asked.
type approver struct {
	mu    sync.Mutex
	asked []string
}

func (a *approver) Approve(_ context.Context, c llm.ToolCall, _ tool.Info) (bool, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, c.Name)
	return true, ""
}

func (a *approver) names() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.asked, " ")
}

func turnEnv(t *testing.T, api string, tools []tool.Tool, ap *approver) *testenv.Env {
	return testenv.New(t, testenv.Options{API: api, ExtraTools: tools, Configure: func(c *agent.Config) {
		c.Approver = ap
	}})
}

// TestTurnCallsMCPTools runs a full turn over the scripted model server in
// both wire formats: read-only MCP tools run in parallel without approval,
// the mutating one is approved first, every kind of result reaches the
// model, strict validation passes, and the request prefix is byte-stable.
func TestTurnCallsMCPTools(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			f := newManager(t, nil, stdio("t", ""))
			sess := f.session(t)
			ap := &approver{}
			env := turnEnv(t, api, sess.Tools(), ap)
			env.Srv.Script(
				fakellm.Calls(
					fakellm.ToolCall("t__echo", `{"text":"hi"}`),
					fakellm.ToolCall("t__add", `{"a":2,"b":3}`),
					fakellm.ToolCall("t__render", `{}`),
					fakellm.ToolCall("t__inventory", `{}`),
					fakellm.ToolCall("t__fail", `{}`),
				),
				fakellm.Calls(fakellm.ToolCall("t__write_note", `{"name":"n1","text":"hello"}`)),
				fakellm.Text("all done"),
			)
			res := env.Run("use the tools")
			if res.Exit != turn.ExitCompleted {
				t.Fatalf("exit %s: %+v", res.Exit, res.Failure)
			}
			if got := ap.names(); got != "t__write_note" {
				t.Errorf("approvals asked for %q; want only t__write_note", got)
			}
			if !testenv.FileExists(f.dir, "note-n1") {
				t.Error("the approved mutating tool did not run")
			}
			if v := env.Srv.Violations(); len(v) > 0 {
				t.Fatalf("strict validation: %v", v)
			}
			reqs := env.Srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests", len(reqs))
			}
			results := map[string]fakellm.Msg{}
			for _, m := range reqs[1].Messages {
				if m.Role == "tool" {
					results[m.ToolCallID] = m
				}
			}
			var all []string
			for _, m := range reqs[1].Messages {
				if m.Role == "tool" {
					all = append(all, m.Text)
				}
			}
			joined := strings.Join(all, "\n")
			for _, w := range []string{"echo: hi", `{"sum":5}`, "[image: image/png, 70 bytes]", "[resource link: file:///tmp/picture.png", "structured content: {\"count\":3", "record 42 not found"} {
				if !strings.Contains(joined, w) {
					t.Errorf("results sent to the model lack %q:\n%s", w, joined)
				}
			}
			body := string(reqs[1].Body)
			if api == "anthropic" {
				if !strings.Contains(body, `"type":"image"`) || !strings.Contains(body, `"is_error":true`) {
					t.Errorf("anthropic: the image part or the error flag is missing from the tool results:\n%s", body)
				}
			}
			for _, w := range testenv.WireProblems(reqs[2].Messages) {
				t.Error(w)
			}
			// Byte stability: the tools are sent identically, and each
			// request's messages are a byte prefix of the next one's.
			for i := 1; i < len(reqs); i++ {
				if !bytes.Equal(testenv.FieldJSON(reqs[i-1].Body, "tools"), testenv.FieldJSON(reqs[i].Body, "tools")) {
					t.Errorf("request %d: the tools changed bytes", i)
				}
				a, _ := testenv.MessagesJSON(reqs[i-1].Body)
				b, _ := testenv.MessagesJSON(reqs[i].Body)
				if !testenv.IsPrefix(stripCacheMarks(a), stripCacheMarks(b)) {
					t.Errorf("request %d: messages are not a byte prefix of the next request's", i)
				}
			}
			// A new session from the same manager offers the same bytes.
			env2 := turnEnv(t, api, f.session(t).Tools(), ap)
			env2.Srv.Script(fakellm.Text("hello"))
			env2.Run("hi")
			if !bytes.Equal(testenv.FieldJSON(reqs[0].Body, "tools"), testenv.FieldJSON(env2.Srv.Requests()[0].Body, "tools")) {
				t.Error("a second session's tool list has different bytes")
			}
		})
	}
}

func stripCacheMarks(b []byte) []byte {
	return bytes.ReplaceAll(b, []byte(testenv.CacheMark), nil)
}

// TestTurnSurvivesFaults: a crash mid-call, a hang past the timeout and a
// restart all happen inside one turn, which completes.
func TestTurnSurvivesFaults(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			cfg := stdio("t", "")
			cfg.Timeout = time.Second
			f := newManager(t, nil, cfg)
			env := turnEnv(t, api, f.session(t).Tools(), &approver{})
			env.Srv.Script(
				fakellm.Calls(fakellm.ToolCall("t__crash", `{}`)),
				fakellm.Calls(fakellm.ToolCall("t__slow", `{"ms":60000}`)),
				fakellm.Calls(fakellm.ToolCall("t__echo", `{"text":"back"}`)),
				fakellm.Text("recovered"),
			)
			res := env.Run("go")
			if res.Exit != turn.ExitCompleted {
				t.Fatalf("exit %s: %+v", res.Exit, res.Failure)
			}
			reqs := env.Srv.Requests()
			last := func(i int) fakellm.Msg { m := reqs[i].Messages; return m[len(m)-1] }
			if m := last(1); !strings.Contains(m.Text, "failed during the call to crash: it exited") {
				t.Errorf("crash result: %q", m.Text)
			}
			if m := last(2); !strings.Contains(m.Text, "did not answer the call to slow within 1s") {
				t.Errorf("timeout result: %q", m.Text)
			}
			if m := last(3); m.Text != "echo: back" {
				t.Errorf("after restart: %q", m.Text)
			}
			if api == "anthropic" && (!last(1).IsError || !last(2).IsError) {
				t.Error("faults not marked as errors")
			}
			testenv.Eventually(5*time.Second, func() bool { return f.status.count("crashing on purpose") == 1 })
			if f.status.count("crashing on purpose") != 1 || f.status.count("did not answer") != 1 {
				t.Errorf("want one status line per fault: %v", f.status.all())
			}
			if v := env.Srv.Violations(); len(v) > 0 {
				t.Fatal(v)
			}
		})
	}
}

// TestTurnInterruptDuringMCPCall is Ctrl+C while an MCP tool runs: the turn
// ends interrupted, the server is told to cancel, and closing the manager
// leaves no process behind.
func TestTurnInterruptDuringMCPCall(t *testing.T) {
	f := newManager(t, nil, stdio("t", ""))
	tools := f.session(t).Tools()
	pid := pidOf(t, tools, "t__pid")
	env := turnEnv(t, "openai", tools, &approver{})
	env.Srv.Script(fakellm.Calls(fakellm.ToolCall("t__slow", `{"ms":60000}`)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		testenv.Eventually(10*time.Second, func() bool { return testenv.FileExists(f.dir, "started-1") })
		cancel()
	}()
	res := env.RunWith(ctx, agent.Input{Text: "wait"})
	if res.Exit != turn.ExitInterrupted {
		t.Fatalf("exit %s", res.Exit)
	}
	if !testenv.Eventually(5*time.Second, func() bool { return testenv.FileExists(f.dir, "cancelled-1") }) {
		t.Error("the server was not told to cancel")
	}
	f.m.Close()
	if !reaped(pid) {
		t.Error("server left running")
	}
}
