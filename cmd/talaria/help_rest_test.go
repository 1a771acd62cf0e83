package main

import (
	"strings"
	"testing"
)

// The remaining commands and subcommands have their own help too: --help
// prints usage and examples on stdout (exit 0); an unknown flag is one line
// pointing at that command's --help (exit 2). Command groups print their
// subcommands.
func TestRestOfCommandsHaveHelp(t *testing.T) {
	e := newCLIEnv(t)
	for _, name := range []string{
		"db migrate", "mcp list", "mcp test",
		"memory list", "memory add", "memory rm", "memory clear",
		"serve", "serve token create", "serve token list", "serve token revoke",
		"trace",
	} {
		args := strings.Fields(name)
		t.Run(name, func(t *testing.T) {
			out := e.run("", append(args, "--help")...)
			if out.code != exitOK || out.stderr != "" ||
				!strings.Contains(out.stdout, "Usage: talaria "+name) || !strings.Contains(out.stdout, "Examples:") {
				t.Errorf("--help: exit %d stderr %q stdout:\n%s", out.code, out.stderr, out.stdout)
			}
			out = e.run("", append(args, "--nope")...)
			if out.code != exitUsage || strings.Count(out.stderr, "\n") != 1 ||
				!strings.Contains(out.stderr, "see talaria "+name+" --help") {
				t.Errorf("--nope: exit %d, want %d and one line pointing at --help; stderr:\n%s", out.code, exitUsage, out.stderr)
			}
		})
	}
	groups := map[string][]string{
		"db":          {"migrate"},
		"mcp":         {"mcp list", "mcp test"},
		"memory":      {"memory list", "memory add", "memory rm", "memory clear"},
		"serve token": {"token create", "token list", "token revoke"},
	}
	for name, subs := range groups {
		t.Run(name+" group", func(t *testing.T) {
			out := e.run("", append(strings.Fields(name), "--help")...)
			if out.code != exitOK || out.stderr != "" || !strings.Contains(out.stdout, "Usage: talaria "+name) {
				t.Errorf("--help: exit %d stderr %q stdout:\n%s", out.code, out.stderr, out.stdout)
			}
			for _, s := range subs {
				if !strings.Contains(out.stdout, s) {
					t.Errorf("group help lacks %q:\n%s", s, out.stdout)
				}
			}
		})
	}
}
