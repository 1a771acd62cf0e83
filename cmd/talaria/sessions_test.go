package main

import (
	"encoding/json"
	"fmt"
	"github.com/talaria-agent/talaria/api"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// sessionsFixture runs two turns in two sessions and returns their ids.
func sessionsFixture(t *testing.T, e *cliEnv) (first, second string) {
	t.Helper()
	e.writeFile("a.txt", "alpha\n")
	e.srv.Script(
		fakellm.Calls(fakellm.ToolCall("read_file", `{"path":"a.txt"}`)),
		fakellm.Text("The file mentions an albatross."),
		fakellm.Text("Penguins cannot fly."),
	)
	r1 := decodeResult(t, e.runTurn("openai", []string{"--json"}, "tell me about a.txt"))
	r2 := decodeResult(t, e.runTurn("openai", []string{"--json"}, "tell me about penguins"))
	if r1.SessionID == "" || r2.SessionID == "" || r1.SessionID == r2.SessionID {
		t.Fatalf("sessions %q and %q", r1.SessionID, r2.SessionID)
	}
	return r1.SessionID, r2.SessionID
}

func TestSessionsListShowSearch(t *testing.T) {
	e := newCLIEnv(t)
	first, second := sessionsFixture(t, e)

	t.Run("list", func(t *testing.T) {
		out := e.run("", "sessions", "list")
		if out.code != exitOK {
			t.Fatalf("exit %d\n%s", out.code, out.stderr)
		}
		lines := strings.Split(strings.TrimSpace(out.stdout), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") {
			t.Fatalf("want a header and two rows:\n%s", out.stdout)
		}
		// Newest first, with the title taken from the first prompt.
		if !strings.HasPrefix(lines[1], second) || !strings.HasPrefix(lines[2], first) || !strings.Contains(lines[2], "tell me about a.txt") {
			t.Errorf("rows:\n%s", out.stdout)
		}
	})
	t.Run("list --json", func(t *testing.T) {
		out := e.run("", "sessions", "list", "--json")
		var list []sessionOut
		if err := json.Unmarshal([]byte(out.stdout), &list); err != nil || out.code != exitOK {
			t.Fatalf("exit %d, %v:\n%s", out.code, err, out.stdout)
		}
		if len(list) != 2 || list[0].ID != second || list[1].ID != first {
			t.Fatalf("list = %+v", list)
		}
		if list[1].MessageCount != 4 || list[1].APICalls != 2 || list[1].Model != testModel || list[1].Cwd != e.ws {
			t.Errorf("first session: %+v; want 4 messages, 2 API calls, model %s, cwd %s", list[1], testModel, e.ws)
		}
	})
	t.Run("list --limit", func(t *testing.T) {
		out := e.run("", "sessions", "list", "--limit", "1", "--json")
		var list []sessionOut
		if err := json.Unmarshal([]byte(out.stdout), &list); err != nil || len(list) != 1 || list[0].ID != second {
			t.Fatalf("list --limit 1: %v %+v", err, list)
		}
	})
	t.Run("show", func(t *testing.T) {
		out := e.run("", "sessions", "show", first)
		if out.code != exitOK {
			t.Fatalf("exit %d\n%s", out.code, out.stderr)
		}
		for _, want := range []string{"session " + first, "#1 user", "tell me about a.txt", "→ read_file", "tool read_file", "alpha", "albatross"} {
			if !strings.Contains(out.stdout, want) {
				t.Errorf("show lacks %q:\n%s", want, out.stdout)
			}
		}
	})
	t.Run("show --json", func(t *testing.T) {
		out := e.run("", "sessions", "show", first, "--json")
		var v struct {
			Session  sessionOut    `json:"session"`
			Messages []api.Message `json:"messages"`
		}
		if err := json.Unmarshal([]byte(out.stdout), &v); err != nil || out.code != exitOK {
			t.Fatalf("exit %d, %v:\n%s", out.code, err, out.stdout)
		}
		var roles []string
		for _, m := range v.Messages {
			roles = append(roles, string(m.Role))
		}
		if v.Session.ID != first || strings.Join(roles, ",") != "user,assistant,tool,assistant" {
			t.Fatalf("session %s roles %v", v.Session.ID, roles)
		}
		call := v.Messages[1].ToolCalls
		if len(call) != 1 || call[0].Name != "read_file" || v.Messages[2].ToolCallID != call[0].ID {
			t.Errorf("tool call and result not paired: %+v / %+v", call, v.Messages[2])
		}
		// The same shape as the API's messages: the tool row names its
		// tool, the assistant rows their model.
		if v.Messages[2].ToolName != "read_file" || v.Messages[1].Model == "" || v.Messages[1].Provider == "" {
			t.Errorf("rows lack tool_name/provider/model: %+v / %+v", v.Messages[1], v.Messages[2])
		}
	})
	t.Run("search", func(t *testing.T) {
		out := e.run("", "sessions", "search", "albatross")
		if out.code != exitOK || !strings.Contains(out.stdout, first) || strings.Contains(out.stdout, second) {
			t.Fatalf("exit %d:\n%s%s", out.code, out.stdout, out.stderr)
		}
		out = e.run("", "sessions", "search", "zeppelin")
		if out.code != exitOK || strings.TrimSpace(out.stdout) != "no matches" {
			t.Errorf("no-match search: exit %d %q", out.code, out.stdout)
		}
	})
	t.Run("search --json", func(t *testing.T) {
		out := e.run("", "sessions", "search", "penguins", "--json")
		var hits []api.SearchHit
		if err := json.Unmarshal([]byte(out.stdout), &hits); err != nil || out.code != exitOK {
			t.Fatalf("exit %d, %v:\n%s", out.code, err, out.stdout)
		}
		if len(hits) == 0 {
			t.Fatal("no hits for penguins")
		}
		for _, h := range hits {
			if h.SessionID != second || h.Seq < 1 || h.Role == "" || !strings.Contains(strings.ToLower(h.Snippet), "penguins") {
				t.Errorf("hit %+v; want one in session %s with seq, role and a snippet", h, second)
			}
		}
		// The keys are snake_case like every other --json output.
		if !strings.Contains(out.stdout, `"session_id"`) || strings.Contains(out.stdout, `"SessionID"`) {
			t.Errorf("search --json keys:\n%s", out.stdout)
		}
	})
	t.Run("search --session", func(t *testing.T) {
		out := e.run("", "sessions", "search", "--session", first, "penguins")
		if out.code != exitOK || strings.TrimSpace(out.stdout) != "no matches" {
			t.Errorf("search limited to the first session found penguins: %q", out.stdout)
		}
	})
}

func TestSessionsDelete(t *testing.T) {
	e := newCLIEnv(t)
	first, second := sessionsFixture(t, e)
	out := e.run("", "sessions", "delete", first)
	if out.code != exitOK || !strings.Contains(out.stdout, "deleted session "+first) {
		t.Fatalf("delete: exit %d %q %q", out.code, out.stdout, out.stderr)
	}
	out = e.run("", "sessions", "list", "--json")
	var list []sessionOut
	if err := json.Unmarshal([]byte(out.stdout), &list); err != nil || len(list) != 1 || list[0].ID != second {
		t.Fatalf("after delete: %v %+v", err, list)
	}
	// Its messages are gone from search too.
	if out := e.run("", "sessions", "search", "albatross"); strings.Contains(out.stdout, first) {
		t.Errorf("deleted session still found:\n%s", out.stdout)
	}
	// Deleting or showing it again is a one-line error.
	for _, sub := range []string{"delete", "show"} {
		out := e.run("", "sessions", sub, first)
		if out.code != exitUsage || len(errorLines(out.stderr)) != 1 || !strings.Contains(out.stderr, "no session") {
			t.Errorf("%s of a deleted session: exit %d\n%s", sub, out.code, out.stderr)
		}
	}
}

func TestSessionsUsageErrors(t *testing.T) {
	e := newCLIEnv(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"sessions"}, "Usage:"},
		{[]string{"sessions", "show"}, "needs a session id"},
		{[]string{"sessions", "search"}, "needs a query"},
		{[]string{"sessions", "delete"}, "needs a session id"},
		{[]string{"sessions", "frob"}, `unknown sessions command "frob"`},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out := e.run("", tc.args...)
			if out.code != exitUsage || !strings.Contains(out.stderr, tc.want) {
				t.Errorf("exit %d, want %d and %q in:\n%s", out.code, exitUsage, tc.want, out.stderr)
			}
		})
	}
	// No database yet lists nothing, in both forms.
	if out := e.run("", "sessions", "list"); out.code != exitOK || !strings.HasPrefix(out.stdout, "no sessions yet") {
		t.Errorf("empty list: %d %q", out.code, out.stdout)
	}
	if out := e.run("", "sessions", "list", "--json"); out.code != exitOK || strings.TrimSpace(out.stdout) != "[]" {
		t.Errorf("empty list --json: %d %q", out.code, out.stdout)
	}
}

// sessions list names every model a session answered with, not only the
// one it started with (issue 25).
func TestSessionsListShowsEveryModel(t *testing.T) {
	e := newCLIEnv(t)
	e.srv.Script(fakellm.Text("first answer"), fakellm.Text("second answer"))
	r := decodeResult(t, e.runTurn("openai", []string{"--json"}, "hello"))
	if out := e.runTurn("openai", []string{"--json", "--session", r.SessionID, "--model", "other-model"}, "again"); out.code != exitOK {
		t.Fatalf("second turn: exit %d\n%s", out.code, out.stderr)
	}
	out := e.run("", "sessions", "list")
	if !strings.Contains(out.stdout, testModel+", other-model") {
		t.Errorf("sessions list does not show both models:\n%s", out.stdout)
	}
	out = e.run("", "sessions", "list", "--json")
	var list []sessionOut
	if err := json.Unmarshal([]byte(out.stdout), &list); err != nil || len(list) != 1 {
		t.Fatalf("list --json: %v\n%s", err, out.stdout)
	}
	want := []api.Model{{Provider: list[0].Provider, Model: testModel}, {Provider: list[0].Provider, Model: "other-model"}}
	if fmt.Sprint(list[0].Models) != fmt.Sprint(want) {
		t.Errorf("models = %+v, want %+v", list[0].Models, want)
	}
}
