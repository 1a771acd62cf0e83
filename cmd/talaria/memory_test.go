package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/store/sqlite"
)

// `talaria memory` adds, lists, removes and clears the workspace's entries,
// keeps workspaces apart, and what it adds reaches the next session's
// system prompt as sent to the model.
func TestMemoryCommands(t *testing.T) {
	e := newCLIEnv(t)
	other := t.TempDir()
	for _, a := range [][]string{
		{"memory", "add", "--workspace", e.ws, "Tests run with -race"},
		{"memory", "add", "--workspace", e.ws, "Use tabs"},
		{"memory", "add", "--workspace", other, "elsewhere"},
	} {
		if out := e.run("", a...); out.code != exitOK || !strings.HasPrefix(out.stdout, "remembered as entry ") {
			t.Fatalf("%v: exit %d %q %q", a, out.code, out.stdout, out.stderr)
		}
	}
	out := e.run("", "memory", "list", "--workspace", e.ws, "--json")
	var list []memoryOut
	if err := json.Unmarshal([]byte(out.stdout), &list); err != nil || len(list) != 2 {
		t.Fatalf("list --json: %v %q", err, out.stdout)
	}
	if list[0].Text != "Tests run with -race" || list[1].Text != "Use tabs" {
		t.Fatalf("entries %+v", list)
	}
	// The next session's prompt carries the memory.
	e.srv.Script(fakellm.Text("ok"))
	if out := e.runTurn("openai", nil, "hi"); out.code != exitOK {
		t.Fatalf("run: %d %s", out.code, out.stderr)
	}
	sys := e.srv.Requests()[0].System
	if !strings.Contains(sys, "- Tests run with -race\n- Use tabs\n") || strings.Contains(sys, "elsewhere") {
		t.Fatalf("system prompt memory block wrong:\n%s", sys)
	}

	id := list[0].ID
	if out := e.run("", "memory", "rm", "--workspace", other, itoa(id)); out.code != exitUsage {
		t.Fatalf("rm from another workspace: exit %d", out.code)
	}
	if out := e.run("", "memory", "rm", "--workspace", e.ws, itoa(id)); out.code != exitOK {
		t.Fatalf("rm: %d %s", out.code, out.stderr)
	}
	out = e.run("", "memory", "list", "--workspace", e.ws)
	if strings.Contains(out.stdout, "-race") || !strings.Contains(out.stdout, "Use tabs") {
		t.Fatalf("after rm:\n%s", out.stdout)
	}
	if out := e.run("", "memory", "clear", "--workspace", e.ws); out.stdout != "removed 1 entries\n" {
		t.Fatalf("clear: %q", out.stdout)
	}
	if out := e.run("", "memory", "list", "--workspace", other); !strings.Contains(out.stdout, "elsewhere") {
		t.Fatalf("clear reached another workspace:\n%s", out.stdout)
	}
	for _, bad := range [][]string{{"memory"}, {"memory", "add"}, {"memory", "rm", "x"}, {"memory", "nope"}} {
		if out := e.run("", bad...); out.code != exitUsage {
			t.Errorf("%v: exit %d, want %d", bad, out.code, exitUsage)
		}
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// `sessions show` prints the subagent tree with outcome and cost, and its
// JSON carries parent_session_id, kind and children.
func TestSessionsShowChildren(t *testing.T) {
	e := newCLIEnv(t)
	e.srv.SetDefault(func(r fakellm.Request) fakellm.Step {
		if strings.Contains(r.System, "You are a subagent") {
			return fakellm.Text("child report").WithUsage(100, 10)
		}
		if r.Messages[len(r.Messages)-1].Role == "user" {
			return fakellm.Calls(fakellm.ToolCall("delegate", `{"task":"look around"}`)).WithUsage(50, 5)
		}
		return fakellm.Text("parent done").WithUsage(60, 5)
	})
	out := e.runTurn("anthropic", []string{"--json"}, "delegate something")
	res := decodeResult(t, out)
	if res.Subagents == nil || res.Subagents.Count != 1 {
		t.Fatalf("result subagents %+v", res.Subagents)
	}
	// The subagent's session is under its parent, not at top level.
	list := e.run("", "sessions", "list")
	if strings.Count(list.stdout, "\n20") != 1 || strings.Contains(list.stdout, "[subagent of") ||
		!strings.Contains(list.stdout, "(1 subagent/review sessions not listed") {
		t.Errorf("sessions list should show the parent only:\n%s", list.stdout)
	}
	show := e.run("", "sessions", "show", res.SessionID)
	for _, s := range []string{"incl. subagents (1 sessions): 3 API calls", "children:", "└ subagent ", "[completed] 1 API calls · $", `"look around"`} {
		if !strings.Contains(show.stdout, s) {
			t.Errorf("show lacks %q:\n%s", s, show.stdout)
		}
	}
	var js struct {
		Session  sessionOut  `json:"session"`
		Children []childNode `json:"children"`
	}
	if err := json.Unmarshal([]byte(e.run("", "sessions", "show", res.SessionID, "--json").stdout), &js); err != nil {
		t.Fatal(err)
	}
	if js.Session.Kind != "" || len(js.Children) != 1 || js.Children[0].Kind != "subagent" || js.Children[0].Outcome != "completed" || js.Children[0].CostUSD <= 0 {
		t.Fatalf("json %+v", js)
	}
	var child struct {
		Session sessionOut `json:"session"`
	}
	_ = json.Unmarshal([]byte(e.run("", "sessions", "show", js.Children[0].ID, "--json").stdout), &child)
	if child.Session.ParentID != res.SessionID || child.Session.Kind != "subagent" {
		t.Fatalf("child json %+v", child.Session)
	}
	// The child is touched last (as a review session is after its
	// parent's turn); --continue still takes the conversation.
	st, err := sqlite.Open(context.Background(), filepath.Join(e.home, "state.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = st.SetTitle(context.Background(), child.Session.ID, "touched")
	_ = st.Close()
	if err != nil {
		t.Fatal(err)
	}
	again := decodeResult(t, e.runTurn("anthropic", []string{"--json", "-c"}, "and again"))
	if again.SessionID != res.SessionID || again.Exit != "completed" {
		t.Fatalf("--continue went to %s (%s), want the conversation %s", again.SessionID, again.Exit, res.SessionID)
	}
	e.noViolations()
}
