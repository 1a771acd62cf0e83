package main

import (
	"regexp"
	"strings"
	"testing"
)

// With compression.rotate, `sessions compact` aimed at the root id always
// writes to the live tip: the first continues the root in a child, the
// second — after more turns there — continues that child, and `sessions
// show` names the whole chain.
func TestSessionsCompactAfterRotationWritesToTip(t *testing.T) {
	e := newCLIEnv(t)
	e.writeConfig(compactConfig + "  rotate: true\n")
	continuesAs := regexp.MustCompile(`the session continues as (\S+)`)
	summarized := regexp.MustCompile(`\([1-9]\d* messages summarized`)
	var root string
	chain := []string{}
	for pass := 1; pass <= 2; pass++ {
		scriptLongSession(e.srv)
		for _, p := range []string{"hi", "write a lot", "thanks"} {
			args := []string{"--json"}
			if root != "" {
				args = append(args, "--session", root)
			}
			r := decodeResult(t, e.runTurn("openai", args, p))
			if root == "" {
				root = r.SessionID
				chain = append(chain, root)
			}
			if want := chain[len(chain)-1]; r.SessionID != want {
				t.Fatalf("pass %d: turn %q ran in %s, want the tip %s", pass, p, r.SessionID, want)
			}
		}
		out := e.run("", append([]string{"sessions", "compact", root}, e.routeArgs("openai")...)...)
		m := continuesAs.FindStringSubmatch(out.stdout)
		if out.code != exitOK || m == nil || !summarized.MatchString(out.stdout) {
			t.Fatalf("pass %d: exit %d\n%s\n%s", pass, out.code, out.stdout, out.stderr)
		}
		for _, id := range chain {
			if m[1] == id {
				t.Fatalf("pass %d: continued as %s, already in the chain %v", pass, id, chain)
			}
		}
		chain = append(chain, m[1])
	}
	show := e.run("", "sessions", "show", chain[2])
	want := "lineage: " + chain[0] + " (ended: compression) → " + chain[1] + " (ended: compression) → " + chain[2] + " (live) ← this one"
	if !strings.Contains(show.stdout, want) {
		t.Errorf("sessions show %s lacks %q:\n%s", chain[2], want, short(show.stdout))
	}
	e.noViolations()
}
