//go:build unix

package mcp_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/testing/mcptest"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/tool/mcp"
)

func TestToolListNamesAndSchemas(t *testing.T) {
	f := newManager(t, nil, stdio("t.s", ""))
	sess := f.session(t)
	got := names(sess.Tools())
	long := ("t_s__" + mcptest.LongName)[:64]
	// Sorted by model name; read.file and read_file collide once
	// sanitised, and the first in name order keeps the plain name.
	want := []string{long, "t_s__add", "t_s__add_tool", "t_s__crash", "t_s__echo", "t_s__fail", "t_s__garbage", "t_s__inventory",
		"t_s__pid", "t_s__read_file", "t_s__read_file_2", "t_s__render", "t_s__slow", "t_s__spawn", "t_s__tag", "t_s__token", "t_s__write_note"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("tools:\n got %v\nwant %v", got, want)
	}
	if r := call(t, context.Background(), find(t, sess.Tools(), "t_s__read_file"), `{}`); r.Content != "dotted" {
		t.Errorf("t_s__read_file should be read.file, got %q", r.Content)
	}
	if r := call(t, context.Background(), find(t, sess.Tools(), "t_s__read_file_2"), `{}`); r.Content != "underscored" {
		t.Errorf("t_s__read_file_2 should be read_file, got %q", r.Content)
	}
	warn := strings.Join(sess.Warnings(), "\n")
	for _, w := range []string{"read_file of server t.s is offered as t_s__read_file_2", "bad_schema of server t.s left out", "frobnicate"} {
		if !strings.Contains(warn, w) {
			t.Errorf("warnings lack %q:\n%s", w, warn)
		}
	}
	if f.status.count("bad_schema") != 1 {
		t.Errorf("the left-out tool should give one status line: %v", f.status.all())
	}
	// The fixable schema was fixed: items added, the unknown required
	// name and $schema dropped; keys sorted.
	tag := find(t, sess.Tools(), "t_s__tag").Info()
	if want := `{"properties":{"tags":{"items":{},"type":"array"}},"required":["tags"],"type":"object"}`; string(tag.Parameters) != want {
		t.Errorf("tag schema:\n got %s\nwant %s", tag.Parameters, want)
	}
	if !find(t, sess.Tools(), "t_s__echo").Info().ReadOnly || find(t, sess.Tools(), "t_s__write_note").Info().ReadOnly {
		t.Error("read-only annotation not carried over")
	}
	// Every tool registers: valid names and schemas.
	if _, err := tool.NewRegistry(sess.Tools()...); err != nil {
		t.Fatal(err)
	}
	rep := sess.Servers()
	if len(rep) != 1 || rep[0].State != mcp.StateReady || len(rep[0].Tools) != len(want) || len(rep[0].Omitted) != 1 {
		t.Errorf("report: %+v", rep)
	}
}

func TestAllowDenyAndApproval(t *testing.T) {
	cfg := stdio("fs", "")
	cfg.Allow = []string{"echo", "write_*", "pid"}
	cfg.Deny = []string{"pid"}
	cfg.AutoApprove = true
	f := newManager(t, nil, cfg)
	sess := f.session(t)
	if got := strings.Join(names(sess.Tools()), " "); got != "fs__echo fs__write_note" {
		t.Fatalf("tools: %s", got)
	}
	if !find(t, sess.Tools(), "fs__write_note").Info().AutoApprove {
		t.Error("approval: auto not carried over")
	}
}

func TestResults(t *testing.T) {
	f := newManager(t, nil, stdio("t", ""))
	tools := f.session(t).Tools()
	ctx := context.Background()
	cases := []struct {
		tool, args string
		want       []string
		isErr      bool
		images     int
	}{
		{"t__echo", `{"text":"hi"}`, []string{"echo: hi"}, false, 0},
		// The SDK mirrors structured output as JSON text: not repeated.
		{"t__add", `{"a":2,"b":3}`, []string{`{"sum":5}`}, false, 0},
		{"t__inventory", `{}`, []string{"3 items in stock", `structured content: {"count":3,"items":["bolts","nuts","washers"]}`}, false, 0},
		{"t__render", `{}`, []string{"rendered", "[image: image/png, 70 bytes]", "[resource link: file:///tmp/picture.png (picture.png), image/png]"}, false, 1},
		{"t__fail", `{}`, []string{"record 42 not found"}, true, 0},
		{"t__token", `{}`, []string{"token=s3cret"}, false, 0},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			r := call(t, ctx, find(t, tools, c.tool), c.args)
			for _, w := range c.want {
				if !strings.Contains(r.Content, w) {
					t.Errorf("content %q lacks %q", r.Content, w)
				}
			}
			if c.tool == "t__add" && strings.Count(r.Content, "sum") != 1 {
				t.Errorf("structured content repeated: %q", r.Content)
			}
			if r.IsError != c.isErr || len(r.Images) != c.images {
				t.Errorf("IsError=%v images=%d, want %v, %d", r.IsError, len(r.Images), c.isErr, c.images)
			}
			if c.images > 0 && (r.Images[0].MediaType != "image/png" || string(r.Images[0].Data) != string(mcptest.PNG)) {
				t.Errorf("image part: %+v", r.Images[0])
			}
		})
	}
}

func pidOf(t *testing.T, tools []tool.Tool, name string) int {
	t.Helper()
	r := call(t, context.Background(), find(t, tools, name), `{}`)
	pid, err := strconv.Atoi(r.Content)
	if err != nil {
		t.Fatalf("pid: %q", r.Content)
	}
	return pid
}

func TestCrashMidCallRestarts(t *testing.T) {
	f := newManager(t, func(o *mcp.Options) { o.MaxRestarts = 2 }, stdio("t", ""))
	tools := f.session(t).Tools()
	ctx := context.Background()
	for round := 1; round <= 3; round++ {
		pid := pidOf(t, tools, "t__pid")
		r := call(t, ctx, find(t, tools, "t__crash"), `{}`)
		if !r.IsError || !strings.Contains(r.Content, "failed during the call to crash: it exited") || !strings.Contains(r.Content, "crashing on purpose") {
			t.Fatalf("round %d: crash result: %q", round, r.Content)
		}
		if !reaped(pid) {
			t.Errorf("round %d: crashed server %d not reaped", round, pid)
		}
		if round == 3 {
			break
		}
		if pid2 := pidOf(t, tools, "t__pid"); pid2 == pid {
			t.Fatalf("round %d: not restarted (pid %d)", round, pid)
		}
	}
	// Bounded: after MaxRestarts crashes the server stays down.
	r := call(t, ctx, find(t, tools, "t__echo"), `{"text":"x"}`)
	if !r.IsError || !strings.Contains(r.Content, "is not restarted again") {
		t.Errorf("after the bound: %q", r.Content)
	}
	// The watcher may report a crash a moment after the call returned.
	testenv.Eventually(5*time.Second, func() bool { return f.status.count("crashing on purpose") >= 3 })
	if n := f.status.count("crashing on purpose"); n != 3 {
		t.Errorf("want one status line per crash (3), got %d: %v", n, f.status.all())
	}
}

func TestHangPastTimeout(t *testing.T) {
	cfg := stdio("t", "")
	cfg.Timeout = time.Second
	f := newManager(t, nil, cfg)
	tools := f.session(t).Tools()
	r := call(t, context.Background(), find(t, tools, "t__slow"), `{"ms":60000}`)
	if !r.IsError || !strings.Contains(r.Content, "did not answer the call to slow within 1s") {
		t.Fatalf("result: %q", r.Content)
	}
	if f.status.count("did not answer slow within 1s") != 1 {
		t.Errorf("status: %v", f.status.all())
	}
	// The server was told to cancel, and still serves.
	if !testenv.Eventually(5*time.Second, func() bool { return testenv.FileExists(f.dir, "cancelled-1") }) {
		t.Error("the server never saw the cancellation")
	}
	if r := call(t, context.Background(), find(t, tools, "t__echo"), `{"text":"still here"}`); r.IsError {
		t.Errorf("after the timeout: %q", r.Content)
	}
}

func TestInterruptCancelsCall(t *testing.T) {
	f := newManager(t, nil, stdio("t", ""))
	tools := f.session(t).Tools()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		testenv.Eventually(10*time.Second, func() bool { return testenv.FileExists(f.dir, "started-1") })
		cancel()
	}()
	r := call(t, ctx, find(t, tools, "t__slow"), `{"ms":60000}`)
	if !r.IsError || !strings.Contains(r.Content, "interrupted; the server was told to cancel it") {
		t.Fatalf("result: %q", r.Content)
	}
	if !testenv.Eventually(5*time.Second, func() bool { return testenv.FileExists(f.dir, "cancelled-1") }) {
		t.Error("notifications/cancelled did not reach the server")
	}
}

func TestGarbage(t *testing.T) {
	cfg := stdio("t", "")
	cfg.Timeout = 2 * time.Second
	f := newManager(t, nil, cfg)
	tools := f.session(t).Tools()
	r := call(t, context.Background(), find(t, tools, "t__garbage"), `{}`)
	if !r.IsError || !strings.Contains(r.Content, "sent something that is not MCP (invalid character") {
		t.Fatalf("result: %q", r.Content)
	}
	// Whatever the SDK made of it, later calls work.
	if r := call(t, context.Background(), find(t, tools, "t__echo"), `{"text":"ok"}`); r.IsError {
		t.Errorf("after garbage: %q", r.Content)
	}
}

func TestStartFailure(t *testing.T) {
	bad := mcp.ServerConfig{Name: "broken", Command: "/nonexistent/mcp-server"}
	noenv := mcp.ServerConfig{Name: "noenv", Command: serverBin, Env: map[string]string{"X": "${UNSET_SECRET}"}}
	dies := mcp.ServerConfig{Name: "dies", Command: "sh", Args: []string{"-c", "echo boom >&2; exit 7"}}
	f := newManager(t, nil, bad, noenv, dies, stdio("ok", ""))
	sess := f.session(t)
	for _, r := range sess.Servers() {
		switch r.Name {
		case "ok":
			if r.State != mcp.StateReady {
				t.Errorf("ok: %+v", r)
			}
		default:
			if r.State != mcp.StateFailed || r.Error == "" || len(r.Tools) != 0 {
				t.Errorf("%s: %+v", r.Name, r)
			}
		}
	}
	all := strings.Join(f.status.all(), "\n")
	for _, w := range []string{"server broken failed to start", "environment variable UNSET_SECRET is not set", "server dies failed to start", "boom"} {
		if !strings.Contains(all, w) {
			t.Errorf("status lacks %q:\n%s", w, all)
		}
	}
	if len(sess.Tools()) == 0 {
		t.Error("the working server's tools should still be offered")
	}
}

func TestHTTPServerWithHeaders(t *testing.T) {
	dir := t.TempDir()
	url, _ := httpServer(t, dir, "s3cret")
	cfg := mcp.ServerConfig{Name: "web", URL: url, Headers: map[string]string{"Authorization": "Bearer ${TEST_TOKEN}"}}
	f := newManager(t, nil, cfg)
	sess := f.session(t)
	if r := sess.Servers()[0]; r.State != mcp.StateReady || r.Transport != "streamable" {
		t.Fatalf("report: %+v", r)
	}
	tools := sess.Tools()
	if r := call(t, context.Background(), find(t, tools, "web__echo"), `{"text":"over http"}`); r.Content != "echo: over http" {
		t.Errorf("echo: %q", r.Content)
	}
	if r := call(t, context.Background(), find(t, tools, "web__write_note"), `{"name":"n","text":"body"}`); r.IsError || !testenv.FileExists(dir, "note-n") {
		t.Errorf("write_note: %q", r.Content)
	}
	// Without the header the server refuses: the header really is sent.
	g := newManager(t, nil, mcp.ServerConfig{Name: "web", URL: url})
	if r := g.session(t).Servers()[0]; r.State != mcp.StateFailed {
		t.Errorf("without the token: %+v", r)
	}
}

func TestHTTPServerCrash(t *testing.T) {
	url, cmd := httpServer(t, t.TempDir(), "")
	cfg := mcp.ServerConfig{Name: "web", URL: url, Timeout: 5 * time.Second}
	f := newManager(t, nil, cfg)
	tools := f.session(t).Tools()
	r := call(t, context.Background(), find(t, tools, "web__crash"), `{}`)
	if !r.IsError {
		t.Fatalf("crash: %q", r.Content)
	}
	_ = cmd // the server process is gone; a later call is an error result, not a hang
	r = call(t, context.Background(), find(t, tools, "web__echo"), `{"text":"x"}`)
	if !r.IsError {
		t.Errorf("call to a dead remote server: %q", r.Content)
	}
}

func TestListChangedTakesEffectNextSession(t *testing.T) {
	f := newManager(t, nil, stdio("t", ""))
	first := f.session(t)
	before := strings.Join(names(first.Tools()), " ")
	call(t, context.Background(), find(t, first.Tools(), "t__add_tool"), `{}`)
	if !testenv.Eventually(5*time.Second, func() bool {
		return f.status.count("changed its tool list; the change takes effect at the next session") == 1
	}) {
		t.Fatalf("no status line: %v", f.status.all())
	}
	if after := strings.Join(names(first.Tools()), " "); after != before {
		t.Error("the running session's tool list changed")
	}
	second := f.session(t)
	if find(t, second.Tools(), "t__late") == nil {
		t.Fatal("unreachable")
	}
}

func TestPerSessionServers(t *testing.T) {
	cfg := stdio("p", "")
	cfg.PerSession = true
	f := newManager(t, nil, cfg)
	a := f.session(t)
	b := f.session(t)
	pa, pb := pidOf(t, a.Tools(), "p__pid"), pidOf(t, b.Tools(), "p__pid")
	if pa == pb {
		t.Fatalf("sessions share the per-session server %d", pa)
	}
	a.Close()
	if !reaped(pa) {
		t.Error("closing the session left its server running")
	}
	if testenv.ProcessGone(pb) {
		t.Error("closing one session stopped another's server")
	}
}

func TestCloseLeavesNoProcesses(t *testing.T) {
	f := newManager(t, nil, stdio("t", ""))
	tools := f.session(t).Tools()
	server := pidOf(t, tools, "t__pid")
	helper, err := strconv.Atoi(call(t, context.Background(), find(t, tools, "t__spawn"), `{}`).Content)
	if err != nil {
		t.Fatal(err)
	}
	f.m.Close()
	if !reaped(server) {
		t.Error("server still running after Close")
	}
	if !testenv.Eventually(5*time.Second, func() bool { return testenv.ProcessGone(helper) }) {
		t.Error("the server's helper process outlived it (process group not killed)")
	}
	r := call(t, context.Background(), find(t, tools, "t__echo"), `{"text":"x"}`)
	if !r.IsError || !strings.Contains(r.Content, "shut down") {
		t.Errorf("call after Close: %q", r.Content)
	}
}

// A shared server that failed to start is tried again by later sessions,
// within the restart bound.
func TestFailedStartRetriedBounded(t *testing.T) {
	marker := t.TempDir()
	// Counts its starts in a file, then fails.
	dies := mcp.ServerConfig{Name: "dies", Command: "sh", Args: []string{"-c", "echo x >> " + marker + "/starts; exit 1"}}
	f := newManager(t, func(o *mcp.Options) { o.MaxRestarts = 1 }, dies)
	for range 4 {
		if r := f.session(t).Servers()[0]; r.State != mcp.StateFailed {
			t.Fatalf("state %s", r.State)
		}
	}
	if n := f.status.count("server dies failed to start"); n != 2 {
		t.Errorf("%d start attempts reported, want 2 (the first and one retry): %v", n, f.status.all())
	}
	b, _ := os.ReadFile(marker + "/starts")
	if n := strings.Count(string(b), "x"); n != 2 {
		t.Errorf("server started %d times, want 2", n)
	}
}

// Closing the manager while a call runs ends the call with an error
// result and stops the server.
func TestCloseDuringCall(t *testing.T) {
	f := newManager(t, nil, stdio("t", ""))
	tools := f.session(t).Tools()
	pid := pidOf(t, tools, "t__pid")
	slow := find(t, tools, "t__slow")
	got := make(chan tool.Result, 1)
	go func() {
		r, _ := slow.Run(context.Background(), []byte(`{"ms":60000}`))
		got <- r
	}()
	if !testenv.Eventually(10*time.Second, func() bool { return testenv.FileExists(f.dir, "started-1") }) {
		t.Fatal("call never started")
	}
	f.m.Close()
	select {
	case r := <-got:
		if !r.IsError || !strings.Contains(r.Content, "shut down during the call to slow") {
			t.Errorf("result: %q", r.Content)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call outlived Close")
	}
	if !reaped(pid) {
		t.Error("server still running")
	}
	if n := len(f.status.all()); n != 2 { // the two schema/name warnings only
		t.Errorf("shutting down is not a fault to report: %v", f.status.all())
	}
}

func TestSSEServer(t *testing.T) {
	url, _ := httpServer(t, t.TempDir(), "", "-sse")
	f := newManager(t, nil, mcp.ServerConfig{Name: "old", URL: url, Transport: "sse"})
	sess := f.session(t)
	if r := sess.Servers()[0]; r.State != mcp.StateReady || r.Transport != "sse" {
		t.Fatalf("report: %+v", r)
	}
	if r := call(t, context.Background(), find(t, sess.Tools(), "old__echo"), `{"text":"sse"}`); r.Content != "echo: sse" {
		t.Errorf("echo: %q", r.Content)
	}
}
