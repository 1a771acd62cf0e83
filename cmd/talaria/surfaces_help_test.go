package main

import (
	"strings"
	"testing"
)

// talaria acp and talaria mcp serve have their own help, and a bad flag is
// one line pointing at it (their protocols own stdout, so nothing else may
// be printed there).
func TestSurfacesHaveHelp(t *testing.T) {
	e := newCLIEnv(t)
	for _, name := range []string{"acp", "mcp serve"} {
		args := strings.Fields(name)
		t.Run(name, func(t *testing.T) {
			out := e.run("", append(args, "--help")...)
			if out.code != exitOK || out.stderr != "" ||
				!strings.Contains(out.stdout, "Usage: talaria "+name) || !strings.Contains(out.stdout, "Examples:") {
				t.Errorf("--help: exit %d stderr %q stdout:\n%s", out.code, out.stderr, out.stdout)
			}
			out = e.run("", append(args, "--nope")...)
			if out.code != exitUsage || out.stdout != "" || strings.Count(out.stderr, "\n") != 1 ||
				!strings.Contains(out.stderr, "see talaria "+name+" --help") {
				t.Errorf("--nope: exit %d stdout %q stderr:\n%s", out.code, out.stdout, out.stderr)
			}
		})
	}
	if out := e.run("", "mcp", "--help"); !strings.Contains(out.stdout, "mcp serve") {
		t.Errorf("mcp --help does not list serve:\n%s", out.stdout)
	}
}
