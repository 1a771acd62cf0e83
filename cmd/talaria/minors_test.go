package main

import (
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// Small things a new user hit: help that prints the version, an empty
// "known:" list, a typo'd provider or stray arguments accepted silently.
func TestMinorUsageFixes(t *testing.T) {
	e := newCLIEnv(t)
	e.srv.Script(fakellm.Text("hi"))
	if out := e.runTurn("openai", nil, "make the database"); out.code != exitOK {
		t.Fatalf("run: exit %d\n%s", out.code, out.stderr)
	}
	e.env["OPENAI_API_KEY"] = "sk-x"
	cases := []struct {
		args []string
		code int
		want string
		not  string
	}{
		{[]string{"version", "--help"}, exitOK, "Usage: talaria version", "talaria dev"},
		{[]string{"mcp", "test", "nope"}, exitUsage, "none are (add them under mcp_servers:", "known: \n"},
		{[]string{"keys", "reset", "nope"}, exitUsage, `no provider "nope" is configured (configured: `, ""},
		{[]string{"chat", "extra", "words"}, exitUsage, "takes no arguments", ""},
		{[]string{"db", "--help"}, exitOK, "state.db", "talaria.db"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out := e.run("", tc.args...)
			all := out.stdout + out.stderr
			if out.code != tc.code || !strings.Contains(all, tc.want) || (tc.not != "" && strings.Contains(all, tc.not)) {
				t.Errorf("exit %d (want %d), want %q without %q in:\n%s", out.code, tc.code, tc.want, tc.not, all)
			}
		})
	}
}

// trace --turn refuses a selector that can name no turn, before looking the
// session up (issue 25 minor: `trace --turn abc` was accepted).
func TestTraceTurnSelectorChecked(t *testing.T) {
	e := newCLIEnv(t)
	for _, args := range [][]string{
		{"trace", "--turn", "abc", "any-session"},
		{"trace", "--turn", "0", "any-session"},
		{"trace", "--turn", "1", "--all", "any-session"},
	} {
		if o := e.run("", args...); o.code != exitUsage || !strings.Contains(o.stderr, "--turn") {
			t.Errorf("%v: exit %d, stderr %q; want a usage error naming --turn", args, o.code, o.stderr)
		}
	}
	for _, sel := range []string{"1", "-1", "t101500a1b2c3"} {
		if !validTurnSel(sel) {
			t.Errorf("%q refused", sel)
		}
	}
}
