package main

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// Every command and subcommand has its own help, on stdout with exit 0,
// listing its own flags and examples, and no other command's flags.
func TestEveryCommandHasItsOwnHelp(t *testing.T) {
	cases := []struct {
		args    []string
		want    []string
		notWant []string
	}{
		{[]string{"run", "--help"}, []string{"Usage: talaria run", "-max-iterations", "Examples:"}, nil},
		{[]string{"chat", "--help"}, []string{"Usage: talaria chat", "/compact", "-continue", "Examples:"}, []string{"Usage of chat"}},
		{[]string{"demo", "-h"}, []string{"Usage: talaria demo", "-latency", "Examples:"}, nil},
		{[]string{"doctor", "--help"}, []string{"Usage: talaria doctor", "-json", "Examples:"}, nil},
		{[]string{"explain-error", "--help"}, []string{"Usage: talaria explain-error", "-transport", "Examples:"}, nil},
		{[]string{"keys", "--help"}, []string{"Usage: talaria keys", "reset", "Examples:"}, nil},
		{[]string{"sessions", "--help"}, []string{"talaria sessions list", "sessions COMMAND --help"}, nil},
		{[]string{"sessions", "list", "--help"}, []string{"Usage: talaria sessions list", "-limit", "Examples:"}, []string{"-all", "-base-url", "-session"}},
		{[]string{"sessions", "show", "--help"}, []string{"Usage: talaria sessions show", "-all"}, []string{"-limit", "-base-url"}},
		{[]string{"sessions", "search", "--help"}, []string{"-session", "-limit"}, []string{"-all", "-base-url"}},
		{[]string{"sessions", "delete", "--help"}, []string{"-force", "exit 8"}, []string{"-limit", "-json"}},
		{[]string{"sessions", "compact", "--help"}, []string{"-base-url", "-model"}, []string{"-limit", "-all"}},
	}
	e := newCLIEnv(t)
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out := e.run("", tc.args...)
			if out.code != exitOK || out.stderr != "" {
				t.Errorf("exit %d stderr %q", out.code, out.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.stdout, w) {
					t.Errorf("help lacks %q:\n%s", w, out.stdout)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out.stdout, w) {
					t.Errorf("help shows another command's %q:\n%s", w, out.stdout)
				}
			}
		})
	}
}

// A bad flag or flag value is one line that points at --help, exit 2; an
// explicit --max-iterations of 0 or less is rejected like the config value.
func TestBadFlagsOneLine(t *testing.T) {
	e := newCLIEnv(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--max-iterations", "lots", "hi"}, "invalid value"},
		{[]string{"run", "--max-iterations", "0", "hi"}, "--max-iterations is 0"},
		{[]string{"run", "--max-iterations=-1", "hi"}, "--max-iterations is -1"},
		{[]string{"chat", "--max-iterations", "0"}, "--max-iterations is 0"},
		{[]string{"run", "--frobnicate", "hi"}, "flag provided but not defined"},
		{[]string{"sessions", "list", "--all"}, "flag provided but not defined: -all"},
		{[]string{"doctor", "--nope"}, "flag provided but not defined"},
		{[]string{"demo", "--latency", "soon"}, "invalid value"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out := e.run("", tc.args...)
			if out.code != exitUsage {
				t.Errorf("exit %d, want %d", out.code, exitUsage)
			}
			if strings.Count(out.stderr, "\n") != 1 || !strings.Contains(out.stderr, tc.want) || !strings.Contains(out.stderr, "--help") {
				t.Errorf("want one line with %q and a pointer to --help, got:\n%s", tc.want, out.stderr)
			}
		})
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}

func TestDoctorJSON(t *testing.T) {
	e := newCLIEnv(t)
	e.env["OPENAI_API_KEY"] = "sk-x"
	out := e.run("", "doctor", "--json")
	var rep struct {
		OK     bool    `json:"ok"`
		Checks []check `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &rep); err != nil || out.code != exitOK || !rep.OK {
		t.Fatalf("doctor --json: exit %d %v\n%s", out.code, err, out.stdout)
	}
	found := false
	for _, c := range rep.Checks {
		if c.Item == "provider openai (default)" && c.Status == "ok" && strings.Contains(c.Detail, "https://api.openai.com/v1") {
			found = true
		}
	}
	if !found {
		t.Errorf("no openai provider check: %+v", rep.Checks)
	}
}

// demo --json prints the JSON result alone on stdout.
func TestDemoJSONAloneOnStdout(t *testing.T) {
	e := newCLIEnv(t)
	out := e.run("", "demo", "--latency", "0s", "--json")
	var res map[string]any
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil || out.code != exitOK {
		t.Fatalf("stdout is not one JSON document (exit %d): %v\n%s", out.code, err, out.stdout)
	}
	if !strings.Contains(out.stderr, "Talaria demo") {
		t.Errorf("the transcript should be on stderr:\n%s", out.stderr)
	}
}

// sessions: delete refuses a session with a running turn (exit 8); show on
// an unknown id is exit 2; compact of an unknown id says so before any
// provider is needed; compact of a busy session is exit 8.
func TestSessionsBusyAndUnknown(t *testing.T) {
	e := newCLIEnv(t)
	if out := e.run("", "sessions", "compact", "nonexistent"); out.code != exitUsage || !strings.Contains(out.stderr, `no session "nonexistent"`) {
		t.Errorf("compact nonexistent: exit %d %s", out.code, out.stderr)
	}
	// The model answers only when the test says so: the turn holds the
	// session for as long as the checks take, however slow the machine.
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the server closes, should a check fail early
	e.srv.Script(fakellm.Step{Respond: func(fakellm.Request) fakellm.Step {
		<-release
		return fakellm.Text("slow answer")
	}})
	done := make(chan cliOut, 1)
	go func() { done <- e.runTurn("openai", nil, "hi") }()
	if !e.srv.Wait(1, 10*time.Second) {
		t.Fatal("the turn never reached the server")
	}
	list := e.run("", "sessions", "list", "--json")
	id := sessionIDFrom(t, list.stdout)
	if out := e.run("", "sessions", "delete", id); out.code != exitBusy || !strings.Contains(out.stderr, "--force") {
		t.Errorf("delete during a turn: exit %d, want %d\n%s", out.code, exitBusy, out.stderr)
	}
	if out := e.run("", "sessions", "compact", id, "--api", "openai", "--base-url", e.srv.OpenAIBaseURL(), "--model", testModel); out.code != exitBusy {
		t.Errorf("compact during a turn: exit %d, want %d\n%s", out.code, exitBusy, out.stderr)
	}
	free()
	if out := <-done; out.code != exitOK {
		t.Fatalf("the turn: exit %d\n%s", out.code, out.stderr)
	}
	if out := e.run("", "sessions", "delete", id); out.code != exitOK {
		t.Errorf("delete after the turn: exit %d\n%s", out.code, out.stderr)
	}
	if out := e.run("", "sessions", "show", id); out.code != exitUsage {
		t.Errorf("show deleted: exit %d", out.code)
	}
}

// run --json that fails before the turn prints a JSON error object with
// the exit code's meaning, alone on stdout.
func TestRunJSONSetupError(t *testing.T) {
	e := newCLIEnv(t)
	for _, args := range [][]string{
		{"run", "--json", "--workspace", e.ws, "hi"},                         // no provider
		{"run", "--json", "--max-iterations", "0", "hi"},                     // bad flag value
		{"run", "--json", "--api", "openai", "--base-url", "localhost", "x"}, // bad URL
	} {
		out := e.run("", args...)
		var je jsonError
		if err := json.Unmarshal([]byte(out.stdout), &je); err != nil || out.code != exitUsage || je.ExitCode != exitUsage ||
			je.ExitMeaning != "bad flags, arguments or configuration" || je.Error == "" {
			t.Errorf("%v: exit %d, stdout %q (%v)", args, out.code, out.stdout, err)
		}
	}
}

// An answer cut off by the output limit on every continuation says so on
// stderr and in the summary line, also in text mode.
func TestTruncatedAnswerSaidInTextMode(t *testing.T) {
	e := newCLIEnv(t)
	e.srv.SetDefault(func(fakellm.Request) fakellm.Step { return fakellm.Truncated("and so on and so") })
	out := e.runTurn("openai", nil, "write a long essay")
	if out.code != exitOK {
		t.Fatalf("exit %d\n%s", out.code, out.stderr)
	}
	if !strings.Contains(out.stderr, "the answer is incomplete") || !strings.Contains(out.stderr, "completed (truncated)") {
		t.Errorf("truncation not said on stderr:\n%s", out.stderr)
	}
}

// A message that alone cannot fit the model's window is refused before the
// first call, with exit 5, instead of being compressed in vain and sent.
func TestOversizedPromptRefusedBeforeSending(t *testing.T) {
	e := newCLIEnv(t)
	e.writeConfig("models:\n  small-model:\n    window: 32768\n    max_output: 4096\n")
	big := strings.Repeat("lorem ipsum dolor sit amet ", 30000) // ~200k tokens
	args := []string{"run", "--api", "openai", "--base-url", e.srv.OpenAIBaseURL(), "--model", "small-model", "--workspace", e.ws, "-"}
	out := e.run(big, args...)
	if out.code != exitContext || !strings.Contains(out.stderr, "your message alone is about") {
		t.Errorf("exit %d, want %d\n%s", out.code, exitContext, out.stderr)
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Errorf("the message was sent %d times", n)
	}
	if out := e.run("", "sessions", "list", "--json"); strings.TrimSpace(out.stdout) != "[]" {
		t.Errorf("a session was left behind:\n%s", out.stdout)
	}
}
