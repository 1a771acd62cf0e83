package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
)

// unknownNotice is the start of the line run and chat print for a model
// the catalogue does not know.
const unknownNotice = "is not in the catalogue: assuming a 32768-token context window"

// run and chat say once, at the start, that a model is not in the
// catalogue and what is assumed for it — once per model, however many
// turns follow — and say nothing for a known model.
func TestUnknownModelNotice(t *testing.T) {
	cases := []struct {
		name   string
		config string
		model  string
		chat   bool
		want   int
	}{
		{name: "run, unknown model", model: "m", want: 1},
		{name: "run, known model", model: "gpt-4o-mini", want: 0},
		{name: "run, unknown fallback too", model: "m", want: 2,
			config: "providers:\n  local:\n    api: openai\n    base_url: BASE\n    model: other-local-model\nfallback:\n  - provider: local\n"},
		{name: "chat, three turns", model: "m", chat: true, want: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newCLIEnv(t)
			if tc.config != "" {
				e.writeConfig(strings.ReplaceAll(tc.config, "BASE", e.srv.OpenAIBaseURL()))
			}
			e.srv.SetDefault(func(fakellm.Request) fakellm.Step { return fakellm.Text("ok") })
			args := []string{"--api", "openai", "--base-url", e.srv.OpenAIBaseURL(), "--model", tc.model, "--workspace", e.ws}
			var out cliOut
			if tc.chat {
				out = e.run("one\ntwo\nthree\n/usage\n", append([]string{"chat"}, args...)...)
			} else {
				out = e.run("", append(append([]string{"run"}, args...), "hi")...)
			}
			if out.code != exitOK {
				t.Fatalf("exit %d\n%s", out.code, out.stderr)
			}
			if got := strings.Count(out.stderr, unknownNotice); got != tc.want {
				t.Errorf("%d notices on stderr, want %d:\n%s", got, tc.want, out.stderr)
			}
			if tc.want > 0 && !strings.Contains(out.stderr, fmt.Sprintf("set models.%s in", tc.model)) {
				t.Errorf("the notice does not say how to declare the model:\n%s", out.stderr)
			}
		})
	}
}

// A turn's cost is computed from the reported usage at the model's list
// price and shown after the turn; the session's total is shown by
// `sessions show` and /usage, next to how full the context is.
//
// The model's own compression threshold from config.yaml is what /usage
// reports.
func TestCostShown(t *testing.T) {
	e := newCLIEnv(t)
	e.writeConfig("models:\n  gpt-4o-mini:\n    compression_threshold: 0.25\n")
	// gpt-4o-mini: $0.15 in, $0.60 out per million tokens.
	e.srv.Script(fakellm.Text("first").WithUsage(100_000, 10_000), fakellm.Text("second").WithUsage(100_000, 10_000))
	args := []string{"run", "--api", "openai", "--base-url", e.srv.OpenAIBaseURL(), "--model", "gpt-4o-mini", "--workspace", e.ws}
	out := e.run("", append(args, "hi")...)
	if out.code != exitOK || !strings.Contains(out.stderr, "· $0.0210") {
		t.Fatalf("exit %d; the turn's cost ($0.0210) is not on stderr:\n%s", out.code, out.stderr)
	}
	id := sessionIDRe.FindString(out.stderr)
	out = e.run("", append(args, "--session", id, "again")...)
	if out.code != exitOK {
		t.Fatalf("second turn: exit %d\n%s", out.code, out.stderr)
	}
	show := e.run("", "sessions", "show", id)
	if !strings.Contains(show.stdout, "$0.0420") || !strings.Contains(show.stdout, "2 API calls") {
		t.Errorf("sessions show lacks the session's total cost:\n%s", show.stdout)
	}
	chat := e.run("/usage\n", "chat", "--api", "openai", "--base-url", e.srv.OpenAIBaseURL(), "--model", "gpt-4o-mini",
		"--workspace", e.ws, "--session", id)
	for _, want := range []string{"cost: $0.0420", "200000 input", "128000-token window, compression at ~32000 tokens", "context: ~"} {
		if !strings.Contains(chat.stdout, want) {
			t.Errorf("/usage lacks %q:\n%s", want, chat.stdout)
		}
	}
}

// compactConfig keeps one message in the protected tail so a short
// session has a middle to summarize.
// The window is small enough that the long answer lies past the tail's
// token budget, large enough that no turn compresses on its own.
const compactConfig = "models:\n  " + testModel + ":\n    window: 20000\n" +
	"compression:\n  tail_messages: 1\n"

// short clips command output for failure messages (the long answer would
// bury them).
func short(s string) string {
	if len(s) > 1500 {
		return "…" + s[len(s)-1500:]
	}
	return s
}

// scriptLongSession scripts a session whose second answer is long (past
// the protected tail's token budget) and then the summary.
func scriptLongSession(srv *fakellm.Server) {
	srv.Script(
		fakellm.Text("hello"),
		fakellm.Text("MIDDLE-ANSWER "+strings.Repeat("lorem ipsum dolor ", 1200)),
		fakellm.Text("short"),
		fakellm.Text("## Task\nthe user said hi\n## State\nlong answer given"),
	)
}

// /compact compresses the chat's session now: the summary request gets
// the middle, /usage then shows a smaller context; with compression.rotate
// the chat goes on in the continuation session, /session names it, and
// `sessions show` shows the lineage from either end.
func TestChatCompact(t *testing.T) {
	for _, rotate := range []bool{false, true} {
		t.Run(fmt.Sprintf("rotate=%v", rotate), func(t *testing.T) {
			e := newCLIEnv(t)
			cfg := compactConfig
			if rotate {
				cfg += "  rotate: true\n"
			}
			e.writeConfig(cfg)
			scriptLongSession(e.srv)
			e.srv.Script(fakellm.Text("after compaction"))
			out := e.chat("openai", "hi\nwrite a lot\nthanks\n/usage\n/compact\n/usage\n/session\nnext\n")
			if out.code != exitOK {
				t.Fatalf("exit %d\n%s\n%s", out.code, short(out.stdout), out.stderr)
			}
			m := regexp.MustCompile(`compressed: ~(\d+) → ~(\d+) tokens \((\d+) messages summarized`).FindStringSubmatch(out.stdout)
			if m == nil {
				t.Fatalf("no compaction line:\n%s\n%s", short(out.stdout), out.stderr)
			}
			var before, after int
			fmt.Sscan(m[1], &before)
			fmt.Sscan(m[2], &after)
			if after >= before || m[3] != "2" {
				t.Errorf("compaction %s", m[0])
			}
			ctxs := regexp.MustCompile(`context: ~(\d+) tokens`).FindAllStringSubmatch(out.stdout, -1)
			if len(ctxs) != 2 {
				t.Fatalf("/usage printed %d context lines, want 2:\n%s", len(ctxs), short(out.stdout))
			}
			var ctxBefore, ctxAfter int
			fmt.Sscan(ctxs[0][1], &ctxBefore)
			fmt.Sscan(ctxs[1][1], &ctxAfter)
			if ctxAfter*2 > ctxBefore {
				t.Errorf("/usage context before /compact ~%d, after ~%d: want it at least halved", ctxBefore, ctxAfter)
			}
			reqs := e.srv.Requests()
			if len(reqs) != 5 {
				t.Fatalf("%d requests, want 3 turns, the summary, 1 turn", len(reqs))
			}
			sum := reqs[3].Messages[0].Text
			if !strings.Contains(sum, "MIDDLE-ANSWER") || strings.Contains(sum, "thanks") {
				t.Errorf("the summary request does not hold just the middle:\n%.300s", sum)
			}
			if !strings.Contains(string(reqs[4].Body), "the user said hi") || strings.Contains(string(reqs[4].Body), "MIDDLE-ANSWER") {
				t.Errorf("the next turn does not carry the summary in place of the middle: %+v", reqs[4].Messages)
			}
			ids := sessionIDRe.FindAllString(out.stdout, -1)
			root, shown := ids[0], ids[len(ids)-1]
			if rotate != (shown != root) {
				t.Fatalf("rotate=%v: chat started in %s and /session says %s", rotate, root, shown)
			}
			if !rotate {
				return
			}
			if !strings.Contains(out.stdout, "the session continues as "+shown) {
				t.Errorf("/compact did not say where the session continues:\n%s", short(out.stdout))
			}
			for _, id := range []string{root, shown} {
				show := e.run("", "sessions", "show", id)
				want := fmt.Sprintf("lineage: %s (ended: compression)", root)
				if !strings.Contains(show.stdout, want) || !strings.Contains(show.stdout, shown+" (live)") {
					t.Errorf("sessions show %s lacks the lineage:\n%s", id, short(show.stdout))
				}
			}
			e.noViolations()
		})
	}
}

// `talaria sessions compact ID` compresses a session from the shell and
// says what it did; an ended chain fails with a plain message.
func TestSessionsCompact(t *testing.T) {
	e := newCLIEnv(t)
	e.writeConfig(compactConfig)
	scriptLongSession(e.srv)
	var id string
	for _, p := range []string{"hi", "write a lot", "thanks"} {
		args := []string{}
		if id != "" {
			args = []string{"--session", id}
		}
		r := decodeResult(t, e.runTurn("openai", append(args, "--json"), p))
		id = r.SessionID
	}
	args := append([]string{"sessions", "compact", id}, e.routeArgs("openai")...)
	out := e.run("", args...)
	if out.code != exitOK || !strings.Contains(out.stdout, "compressed session "+id+": ~") || !strings.Contains(out.stdout, "2 messages summarized") {
		t.Fatalf("exit %d\n%s\n%s", out.code, short(out.stdout), out.stderr)
	}
	show := e.run("", "sessions", "show", id, "--all")
	if !strings.Contains(show.stdout, "[summary]") || !strings.Contains(show.stdout, "[archived]") {
		t.Errorf("sessions show --all lacks the summary or the archived rows:\n%s", short(show.stdout))
	}

	// End the session for good: compacting it must fail, not write.
	st, err := sqlite.Open(context.Background(), e.home+"/state.db", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.EndSession(context.Background(), id, store.EndUser); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	out = e.run("", args...)
	if out.code == exitOK || !strings.Contains(out.stderr, "has ended and has no live continuation") {
		t.Errorf("compacting an ended session: exit %d\n%s", out.code, out.stderr)
	}
}

// `sessions show` on any session of a three-hop chain shows the whole
// lineage, root to live tip, marking the one shown.
func TestSessionsShowLineage(t *testing.T) {
	e := newCLIEnv(t)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, e.home+"/state.db", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"root", "hop1", "hop2", "tip"}
	for i, id := range ids {
		s := &store.Session{ID: id, StartedAt: time.Unix(int64(1000+i), 0)}
		if i > 0 {
			s.ParentID = ids[i-1]
		}
		if err := st.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
		if i < len(ids)-1 {
			if err := st.EndSession(ctx, id, store.EndCompression); err != nil {
				t.Fatal(err)
			}
		}
	}
	_ = st.Close()
	for _, id := range ids {
		out := e.run("", "sessions", "show", id)
		want := "lineage: root (ended: compression) → hop1 (ended: compression) → hop2 (ended: compression) → tip (live)"
		line := ""
		for _, l := range strings.Split(out.stdout, "\n") {
			if strings.HasPrefix(l, "lineage: ") {
				line = strings.ReplaceAll(l, " ← this one", "")
			}
		}
		if out.code != exitOK || line != want || !strings.Contains(out.stdout, id+" (") {
			t.Errorf("show %s: exit %d, lineage %q; want %q", id, out.code, line, want)
		}
		if !strings.Contains(out.stdout, id+" (live) ← this one") && !strings.Contains(out.stdout, id+" (ended: compression) ← this one") {
			t.Errorf("show %s does not mark itself:\n%s", id, out.stdout)
		}
	}
}

// A per-model compression threshold outside (0, 1] is a configuration
// error that names the key.
func TestModelThresholdValidated(t *testing.T) {
	e := newCLIEnv(t)
	e.writeConfig("models:\n  gpt-4o-mini:\n    compression_threshold: 1.5\n")
	out := e.runTurn("openai", nil, "hi")
	if out.code != exitUsage || !strings.Contains(out.stderr, "models.gpt-4o-mini.compression_threshold is 1.5") {
		t.Fatalf("exit %d\n%s", out.code, out.stderr)
	}
	if len(e.srv.Requests()) != 0 {
		t.Error("a request was sent with an invalid configuration")
	}
}
