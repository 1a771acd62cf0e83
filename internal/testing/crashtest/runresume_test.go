//go:build unix

package crashtest

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/telemetrytest"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/observe"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// killCase is one kill point of TestKilledRunContinues.
type killCase struct {
	name   string
	prompt string
	mcp    bool
	cont   []string // how the second run names the session
	// step answers the turn's first request; later ones get its answer.
	step   fakellm.Step
	answer string
	// hold: the process is held inside write_file's rename (strace),
	// before it takes effect (holdBefore) or after (holdAfter).
	hold int
	// setup prepares the workspace before the run starts.
	setup func(h *home)
	// killWhen says the process (p) is at the kill point.
	killWhen func(h *home, srv *fakellm.Server, p *proc) bool
	check    func(t *testing.T, h *home, rows []store.Message)
}

// resumedRun is `run --json`'s output with the cut-off turn it decided.
type resumedRun struct {
	turn.Result
	Resumed *agent.CutOffOutcome `json:"resumed"`
}

func (p *proc) resumed(t *testing.T) resumedRun {
	t.Helper()
	var r resumedRun
	if err := json.Unmarshal([]byte(p.stdout.String()), &r); err != nil {
		t.Fatalf("stdout is not a run result (%v):\n%s\nstderr:\n%s", err, p.stdout, p.stderr)
	}
	return r
}

// TestKilledRunContinues: SIGKILL a real `talaria run` at five points of a
// turn — while the model's answer streams, inside a read-only (MCP) tool,
// inside a shell command that appends to a counter file, inside write_file
// before and after its rename takes effect — then `talaria run -c` (or
// --session) with no prompt continues that turn from its last durable
// point to its answer: the stream is asked again, the read-only tool runs
// again, the shell command does not (its result says it may or may not
// have taken effect, and the counter shows exactly one append), write_file
// does not either (its result says from the ledger's content hashes which
// state the file is in). Every request passes strict validation.
func TestKilledRunContinues(t *testing.T) {
	cases := []killCase{
		{
			name: "model_streams", prompt: "stream", cont: []string{"-c"},
			step:   fakellm.Text(strings.Repeat("a long answer that streams slowly ", 40)).WithChunkDelay(100 * time.Millisecond),
			answer: "streamed answer",
			killWhen: func(h *home, srv *fakellm.Server, _ *proc) bool {
				if len(srv.Requests()) == 0 {
					return false
				}
				// Well inside the stream: it takes seconds, chunk by chunk.
				time.Sleep(500 * time.Millisecond)
				return true
			},
		},
		{
			name: "readonly_tool", prompt: "slow read", mcp: true,
			step:   fakellm.Calls(fakellm.ToolCall("t__slow", `{"ms":2000}`)),
			answer: "read done",
			killWhen: func(h *home, srv *fakellm.Server, _ *proc) bool {
				return testenv.FileExists(h.dir, "notes/started-1")
			},
			check: func(t *testing.T, h *home, rows []store.Message) {
				if !hasResult(rows, "waited 2000ms") {
					t.Errorf("the read-only call was not run again: rows %v", testenv.Roles(rows))
				}
			},
		},
		{
			name: "shell_appends", prompt: "append", cont: []string{"-c"},
			step:   fakellm.Calls(fakellm.ToolCall("shell", `{"command":"echo x >> count.txt && sleep 30"}`)),
			answer: "append done",
			killWhen: func(h *home, srv *fakellm.Server, _ *proc) bool {
				b, _ := os.ReadFile(filepath.Join(h.ws, "count.txt"))
				return len(b) > 0
			},
			check: func(t *testing.T, h *home, rows []store.Message) {
				if b, _ := os.ReadFile(filepath.Join(h.ws, "count.txt")); string(b) != "x\n" {
					t.Errorf("the command appended %d times; want exactly once", strings.Count(string(b), "x"))
				}
				if !hasResult(rows, "may or may not have taken effect") {
					t.Errorf("the shell call's result does not say it may or may not have taken effect: rows %v", testenv.Roles(rows))
				}
			},
		},
		writeCase("write_before", holdBefore, "is exactly as it was before the call: the call did not take effect"),
		writeCase("write_after", holdAfter, "changed after the call started: the call most likely took effect"),
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakellm.New()
			t.Cleanup(srv.Close)
			var first, arrived atomic.Bool
			held := make(chan struct{})
			if tc.hold == 0 {
				close(held)
			}
			srv.SetDefault(func(r fakellm.Request) fakellm.Step {
				if first.CompareAndSwap(false, true) {
					// A held case's call waits for the tracer.
					arrived.Store(true)
					<-held
					return tc.step
				}
				return fakellm.Text(tc.answer)
			})
			h := newHome(t, srv)
			// Spans go to a real OTLP/HTTP collector: the continued
			// turn's span must link to the killed attempt's.
			otlp := telemetrytest.NewReceiver(t)
			h.env = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp.URL, "OTEL_METRICS_EXPORTER=none"}
			if tc.mcp {
				mcpConfig(t, h, filepath.Join(h.dir, "notes"))
			}
			if tc.setup != nil {
				tc.setup(h)
			}
			sid := h.newSession()
			p := h.start("run", "--session", sid, "--yes", "--quiet", tc.prompt)
			var tracer *os.Process
			if tc.hold != 0 {
				if !testenv.Eventually(30*time.Second, func() bool { return arrived.Load() || p.exited() }) || p.exited() {
					t.Fatalf("the run never asked the model (exited %v):\n%s\n%s", p.exited(), p.stdout, p.stderr)
				}
				tracer = testenv.HoldRenames(t, p.cmd.Process.Pid, tc.hold == holdAfter)
				close(held)
			}
			if !testenv.Eventually(30*time.Second, func() bool { return tc.killWhen(h, srv, p) || p.exited() }) || p.exited() {
				t.Fatalf("the run never reached its kill point (exited %v):\n%s\n%s", p.exited(), p.stdout, p.stderr)
			}
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if tracer != nil {
				// A thread its tracer stopped is reaped only once the
				// tracer lets go; the pending SIGKILL ends it first.
				_ = tracer.Kill()
			}
			p.wait(t, 10*time.Second)
			cut := h.rows(sid)
			turnID := cut[len(cut)-1].TurnID

			args := append([]string{"--yes", "--json"}, tc.cont...)
			if len(tc.cont) == 0 {
				args = append(args, "--session", sid)
			}
			c, code := h.run("run", args...)
			if code != 0 {
				t.Fatalf("run %v after the kill: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, c.stdout, c.stderr)
			}
			res := c.resumed(t)
			if res.Resumed == nil || res.Resumed.Outcome != agent.CutOffContinued || res.Resumed.TurnID != turnID || res.Resumed.Handoff == nil {
				t.Fatalf("run does not say it continued turn %s: %+v\n%s", turnID, res.Resumed, c.stderr)
			}
			if res.TurnID != turnID || res.FinalText != tc.answer {
				t.Errorf("the continued turn answered %q in turn %s; want %q in %s", res.FinalText, res.TurnID, tc.answer, turnID)
			}
			checkWire(t, srv)
			rows := h.rows(sid)
			answers := 0
			for _, r := range rows {
				if r.TurnID == turnID && r.Role == llm.RoleAssistant && r.Text() == tc.answer {
					answers++
				}
				if r.TurnID != turnID {
					t.Errorf("a row of another turn: %s %q", r.Role, r.Text())
				}
			}
			if answers != 1 {
				t.Errorf("%d answers in the continued turn; want 1: rows %v", answers, testenv.Roles(rows))
			}
			if tc.check != nil {
				tc.check(t, h, rows)
			}
			checkShownHandoff(t, h, sid, turnID)
			checkSpanLink(t, h, otlp, sid, turnID)
			// Ended now: a second -c has nothing to continue.
			again, code := h.run("run", "--session", sid, "--json")
			if code != exitUsage || !again.stderr.Contains("not cut off") {
				t.Errorf("run with no prompt after the turn ended: exit %d\n%s", code, again.stderr)
			}
		})
	}
}

const exitUsage = 2

// Where a write_file case holds the process: in its rename, before it
// takes effect or after.
const (
	holdBefore = 1 + iota
	holdAfter
)

// writeCase kills the run inside write_file's rename (hold): before it
// the file does not exist yet; after it the file had "before" and now has
// "after". The continued turn does not write again; the call's result
// says which state the ledger's hashes find the file in (verdict).
func writeCase(name string, hold int, verdict string) killCase {
	want := "" // the file's content after the kill; "" is no file
	if hold == holdAfter {
		want = "after\n"
	}
	return killCase{
		name: name, prompt: "write", cont: []string{"-c"}, hold: hold,
		step:   fakellm.Calls(fakellm.ToolCall("write_file", `{"path":"out.txt","content":"after\n"}`)),
		answer: "write done",
		setup: func(h *home) {
			if hold == holdAfter {
				if err := os.WriteFile(filepath.Join(h.ws, "out.txt"), []byte("before\n"), 0o644); err != nil {
					h.t.Fatal(err)
				}
			}
		},
		killWhen: func(h *home, _ *fakellm.Server, p *proc) bool {
			b, _ := os.ReadFile(filepath.Join(h.ws, "out.txt"))
			// A delay_exit rename passes a brief stop on its way in too.
			return testenv.InRename(p.cmd.Process.Pid) && string(b) == want
		},
		check: func(t *testing.T, h *home, rows []store.Message) {
			b, err := os.ReadFile(filepath.Join(h.ws, "out.txt"))
			if string(b) != want || (want == "") != os.IsNotExist(err) {
				t.Errorf("out.txt has %q (%v); want %q: written at most once, by the killed run", b, err, want)
			}
			if !hasResult(rows, verdict) {
				t.Errorf("no write_file result saying the file %s: rows %v", verdict, testenv.Roles(rows))
			}
		},
	}
}

func hasResult(rows []store.Message, text string) bool {
	for _, r := range rows {
		if r.Role == llm.RoleTool && strings.Contains(r.Text(), text) {
			return true
		}
	}
	return false
}

// mcpConfig gives h the mcptest server as MCP server "t", writing its
// markers under notes.
func mcpConfig(t *testing.T, h *home, notes string) {
	t.Helper()
	srvBin := filepath.Join(t.TempDir(), "mcptestserver")
	if out, err := exec.Command("go", "build", "-o", srvBin, "github.com/talaria-agent/talaria/internal/testing/mcptest/mcptestserver").CombinedOutput(); err != nil {
		t.Fatalf("build mcptestserver: %v\n%s", err, out)
	}
	if err := os.MkdirAll(notes, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "mcp_servers:\n  t:\n    command: " + srvBin + "\n    sandbox: {mode: off}\n    env: {MCPTEST_DIR: " + notes + "}\n"
	if err := os.WriteFile(filepath.Join(h.dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// checkShownHandoff: `sessions show` lists the turn's one handoff, in
// --json as typed fields, in text as a line.
func checkShownHandoff(t *testing.T, h *home, sid, turnID string) {
	t.Helper()
	out, err := h.command(t.Context(), "sessions", "show", sid, "--json").Output()
	if err != nil {
		t.Fatalf("sessions show --json: %v", err)
	}
	var shown struct {
		Handoffs []struct {
			TurnID  string    `json:"turn_id"`
			At      time.Time `json:"at"`
			From    string    `json:"from"`
			To      string    `json:"to"`
			Count   int       `json:"count"`
			Max     int       `json:"max"`
			Fence   int64     `json:"fence"`
			Outcome string    `json:"outcome"`
		} `json:"handoffs"`
	}
	if err := json.Unmarshal(out, &shown); err != nil {
		t.Fatalf("sessions show --json: %v\n%s", err, out)
	}
	if len(shown.Handoffs) != 1 {
		t.Fatalf("sessions show lists %d handoffs; want 1:\n%s", len(shown.Handoffs), out)
	}
	ho := shown.Handoffs[0]
	if ho.TurnID != turnID || ho.At.IsZero() || ho.From == "" || ho.To == "" || ho.From == ho.To ||
		ho.Count != 1 || ho.Max != 2 || ho.Fence <= 0 || ho.Outcome != string(turn.ExitCompleted) {
		t.Errorf("the handoff as sessions show --json has it: %+v", ho)
	}
	text, err := h.command(t.Context(), "sessions", "show", sid).Output()
	if err != nil || !strings.Contains(string(text), "handoffs: 1") || !strings.Contains(string(text), "handoff 1 of at most 2") {
		t.Errorf("sessions show does not list the handoff (%v):\n%s", err, text)
	}
}

// checkSpanLink: the continued turn's span, as the collector got it,
// carries a link to the span the killed process started for the turn (its
// id kept in the turn's "span" event as that attempt began).
func checkSpanLink(t *testing.T, h *home, otlp *telemetrytest.Receiver, sid, turnID string) {
	t.Helper()
	evs, err := h.reader.TurnEvents(t.Context(), sid, turnID)
	if err != nil {
		t.Fatal(err)
	}
	var dead struct {
		TraceID string `json:"trace_id"`
		SpanID  string `json:"span_id"`
	}
	for _, e := range evs {
		if e.Kind == observe.SpanEventKind && e.Seq == observe.SpanSeq {
			_ = json.Unmarshal([]byte(e.Detail), &dead)
		}
	}
	if dead.SpanID == "" {
		t.Fatalf("the killed attempt's span was not kept; events %+v", evs)
	}
	var linked, turns int
	for _, s := range otlp.Spans() {
		a := telemetrytest.Attrs(s.Attributes)
		if s.Name != "turn" || a["talaria.turn.id"] != turnID {
			continue
		}
		turns++
		if hex.EncodeToString(s.SpanId) == dead.SpanID {
			t.Errorf("the killed attempt's span was exported: it never ended")
		}
		for _, l := range s.Links {
			if hex.EncodeToString(l.SpanId) == dead.SpanID && hex.EncodeToString(l.TraceId) == dead.TraceID {
				linked++
			}
		}
	}
	if turns != 1 || linked != 1 {
		t.Errorf("%d turn spans of %s exported, %d linking to the killed attempt's span %s; want 1 and 1", turns, turnID, linked, dead.SpanID)
	}
}
