package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
)

func TestTermSafe(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plain text and unicode", "héllo\twörld\n✓", "héllo\twörld\n✓"},
		{"window title (OSC 0, BEL)", "a\x1b]0;pwned\x07b", "ab"},
		{"clear screen (CSI)", "a\x1b[2J\x1b[Hb", "ab"},
		{"colour", "\x1b[31mred\x1b[0m", "red"},
		{"hyperlink (OSC 8, ST)", "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", "click"},
		{"clipboard write (OSC 52)", "x\x1b]52;c;cm0gLXJmIH4=\x07y", "xy"},
		{"8-bit CSI", "a\u009b2Jb", "ab"},
		{"carriage return and backspace", "safe\rEVIL\b", "safeEVIL"},
		{"two-byte escape (reset)", "a\x1bcb", "ab"},
		{"charset escape", "a\x1b(Bb", "ab"},
		{"Latin-1 letters stay", "Größe ¿", "Größe ¿"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := termSafe(tc.in); got != tc.want {
				t.Errorf("termSafe(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	t.Run("a sequence split across writes", func(t *testing.T) {
		var out testenv.Buffer
		w := newTermWriter(&out)
		for _, part := range []string{"ok \x1b", "]0;ti", "tle\x07 done \xc2", "\x9b2J!"} {
			if n, err := w.Write([]byte(part)); err != nil || n != len(part) {
				t.Fatalf("Write(%q) = %d, %v", part, n, err)
			}
		}
		if got := out.String(); got != "ok  done !" {
			t.Errorf("got %q", got)
		}
	})
}

// Escape sequences from a file (through a tool result shown in progress)
// and from the model (the answer) never reach a terminal; the store and
// --json keep the bytes.
func TestControlSequencesKeptFromTerminal(t *testing.T) {
	e := newCLIEnv(t)
	const evil = "\x1b]0;pwned\x07\x1b[2J"
	e.writeFile("notes.txt", evil+"first line of notes\n")
	e.srv.Script(
		fakellm.Calls(fakellm.ToolCall("read_file", `{"path":"notes.txt"}`)),
		fakellm.Text("the answer"+evil+" ends here"),
	)
	var stdout, stderr testenv.Buffer
	args := append([]string{"run"}, e.routeArgs("openai")...)
	code := newCLI(strings.NewReader(""), &stdout, &stderr, e.getenv, true, true).dispatch(context.Background(), append(args, "read the notes"))
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	for name, s := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String()} {
		if strings.ContainsRune(s, 0x1b) || strings.ContainsRune(s, 0x07) {
			t.Errorf("%s carries control sequences: %q", name, s)
		}
	}
	if !strings.Contains(stdout.String(), "the answer ends here") {
		t.Errorf("answer lost: %q", stdout.String())
	}
	// The stored answer is intact, and --json shows it (escaped by JSON).
	show := e.run("", "sessions", "list", "--json")
	if show.code != exitOK {
		t.Fatalf("sessions list: %d %s", show.code, show.stderr)
	}
	out := e.run("", "sessions", "show", "--json", sessionIDFrom(t, show.stdout))
	if !strings.Contains(out.stdout, `\u001b]0;pwned\u0007`) {
		t.Errorf("--json lost the stored bytes:\n%s", out.stdout)
	}
}

// sessionIDFrom returns the first id of `sessions list --json` output.
func sessionIDFrom(t *testing.T, listJSON string) string {
	t.Helper()
	var list []sessionOut
	if err := json.Unmarshal([]byte(listJSON), &list); err != nil || len(list) == 0 {
		t.Fatalf("sessions list --json: %v\n%s", err, listJSON)
	}
	return list[0].ID
}
