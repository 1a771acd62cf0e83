//go:build unix

package crashtest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// defaultCrashPoints is the number of kills in a normal run;
// TALARIA_CRASH_POINTS asks for more.
const defaultCrashPoints = 30

func crashPoints(t *testing.T) int {
	if v := os.Getenv("TALARIA_CRASH_POINTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("TALARIA_CRASH_POINTS=%q: want a positive number", v)
		}
		return n
	}
	if testing.Short() {
		return 6
	}
	return defaultCrashPoints
}

// killPlan says when one point's process is killed: after the model
// server received afterRequests requests (0: from the start), plus delay.
type killPlan struct {
	afterRequests int
	delay         time.Duration
}

func (k killPlan) String() string {
	if k.afterRequests == 0 {
		return fmt.Sprintf("at %v", k.delay.Round(time.Millisecond))
	}
	return fmt.Sprintf("%v after request %d", k.delay.Round(time.Millisecond), k.afterRequests)
}

// plans spreads n kills over a turn that took full and made requests API
// calls: half by time since the start, half relative to each request.
func plans(n int, full time.Duration, requests int) []killPlan {
	out := make([]killPlan, 0, n)
	byTime := (n + 1) / 2
	for i := range byTime {
		out = append(out, killPlan{delay: full * time.Duration(2*i+1) / time.Duration(2*byTime)})
	}
	gap := full / time.Duration(2*requests)
	for i := 0; len(out) < n; i++ {
		steps := (n - byTime + requests - 1) / requests
		out = append(out, killPlan{afterRequests: 1 + i%requests, delay: gap * time.Duration(i/requests) / time.Duration(steps)})
	}
	return out
}

// rowKey is what must never change about a committed row.
type rowKey struct {
	Seq        int64
	TurnID     string
	Role       llm.Role
	Text       string
	Calls      string
	ToolCallID string
	IsError    bool
	Kind       store.RowKind
	APIContent string
	Archived   bool
}

func keyOf(m *store.Message) rowKey {
	var calls []string
	for _, c := range m.ToolCalls {
		calls = append(calls, c.ID+" "+c.Name+" "+string(c.Arguments))
	}
	return rowKey{Seq: m.Seq, TurnID: m.TurnID, Role: m.Role, Text: m.Text(), Calls: strings.Join(calls, "|"),
		ToolCallID: m.ToolCallID, IsError: m.IsError, Kind: m.Kind, APIContent: m.APIContent, Archived: m.Archived}
}

// TestKillAnywhere kills a real `talaria run` with SIGKILL at many points of
// a multi-tool turn. After each kill: the database opens and passes an
// integrity check, every row a second connection saw committed is still
// there unchanged, an answer the process printed is on disk, and
// `talaria run --session ID "continue please"` completes with a request
// the strict model server accepts — built from everything committed, never
// rewriting a stored row.
func TestKillAnywhere(t *testing.T) {
	srv := fakellm.New()
	defer srv.Close()
	srv.SetDefault(model)
	h := newHome(t, srv)

	// One uninterrupted turn measures how long the whole thing takes here.
	sid := h.newSession()
	start := time.Now()
	p, code := h.run("run", "--session", sid, "--yes", "--quiet", taskPrompt)
	full := time.Since(start)
	if code != 0 || !p.stdout.Contains(finalAnswer) {
		t.Fatalf("uninterrupted run: exit %d\nstdout:\n%s\nstderr:\n%s", code, p.stdout, p.stderr)
	}
	requests := len(srv.Requests())
	checkWire(t, srv)
	t.Logf("uninterrupted turn: %v, %d requests, %d rows", full.Round(time.Millisecond), requests, len(h.rows(sid)))

	phases := map[string]int{}
	finished := 0
	var resumes []time.Duration
	for i, plan := range plans(crashPoints(t), full, requests) {
		// Every wire format takes its turn at being killed mid-turn.
		api := []string{"openai", "anthropic", "openai-responses", "gemini"}[i%4]
		t.Run(fmt.Sprintf("%02d_%s_%s", i, api, strings.ReplaceAll(plan.String(), " ", "_")), func(t *testing.T) {
			h.t, h.api = t, api
			phase, done, resume := killAndResume(t, h, plan)
			phases[phase]++
			resumes = append(resumes, resume)
			if done {
				finished++
			}
		})
	}
	h.t = t
	names := make([]string, 0, len(phases))
	for p := range phases {
		names = append(names, p)
	}
	sort.Strings(names)
	var summary []string
	for _, p := range names {
		summary = append(summary, fmt.Sprintf("%s: %d", p, phases[p]))
	}
	t.Logf("kills by the last committed row: %s; %d runs finished before their kill", strings.Join(summary, ", "), finished)
	if len(resumes) > 0 {
		slices.Sort(resumes)
		t.Logf("resuming after a kill (a whole `talaria run` process): median %v, max %v",
			resumes[len(resumes)/2].Round(time.Millisecond), resumes[len(resumes)-1].Round(time.Millisecond))
	}
	if n := crashPoints(t); n >= 20 && len(phases) < 3 {
		t.Errorf("the kills landed in only %d distinct places (%v); want them spread over the turn", len(phases), summary)
	}
}

// killAndResume runs one crash point. It returns where in the turn the kill
// landed (described by the last committed row), whether the process
// finished before it could be killed, and how long the resuming run took.
func killAndResume(t *testing.T, h *home, plan killPlan) (phase string, finished bool, resume time.Duration) {
	sid := h.newSession()
	h.srv.Reset()

	// Watch the session through the test's own connection while the
	// process writes: whatever is seen was committed.
	seen := map[int64]rowKey{}
	var mu sync.Mutex
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			rows, err := h.reader.Messages(context.Background(), sid, store.MessageQuery{IncludeArchived: true})
			if err == nil {
				mu.Lock()
				for i := range rows {
					if _, ok := seen[rows[i].ID]; !ok {
						seen[rows[i].ID] = keyOf(&rows[i])
					}
				}
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()

	p := h.start("run", "--session", sid, "--yes", "--quiet", taskPrompt)
	if plan.afterRequests > 0 {
		h.srv.Wait(plan.afterRequests, 20*time.Second)
	}
	select {
	case <-time.After(plan.delay):
	case <-p.done:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	close(stop)
	<-watched
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		finished = true
		if code := p.cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("the run ended by itself with exit %d before the kill:\n%s", code, p.stderr)
		}
	}
	checkWire(t, h.srv)

	// The database opens, fresh, and is sound.
	after := h.freshRows(t, sid)
	phase = describePhase(after)
	intact(t, "after the kill", seen, after)
	if p.stdout.Contains(finalAnswer) && !slices.ContainsFunc(after, func(m store.Message) bool {
		return m.Role == llm.RoleAssistant && strings.Contains(m.Text(), finalAnswer)
	}) {
		t.Errorf("the process printed the final answer but it is not in the database")
	}

	// The session resumes: the dead holder's lease is taken over at once
	// and the continuation's request passes strict validation.
	h.srv.Reset()
	began := time.Now()
	// handoff interrupt: the cut-off turn is marked, not continued (that
	// is TestKilledRunContinues), so the prompt's turn is the one request.
	c, code := h.run("run", "--session", sid, "--yes", "--quiet", "--json", "--handoff", "interrupt", continuePrompt)
	resume = time.Since(began)
	if code != 0 {
		t.Fatalf("continue after the kill (%s): exit %d\nstdout:\n%s\nstderr:\n%s", phase, code, c.stdout, c.stderr)
	}
	if res := c.result(t); !strings.Contains(res.FinalText, continueAnswer) {
		t.Errorf("continue answered %q", res.FinalText)
	}
	checkWire(t, h.srv)
	reqs := h.srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("continue sent %d requests, want 1", len(reqs))
	}
	sentAll(t, after, reqs[0].Messages)
	intact(t, "after the continuation", seen, h.rows(sid))
	return phase, finished, resume
}

// intact fails the test unless every row in seen is in rows, unchanged.
func intact(t *testing.T, when string, seen map[int64]rowKey, rows []store.Message) {
	t.Helper()
	now := make(map[int64]rowKey, len(rows))
	for i := range rows {
		now[rows[i].ID] = keyOf(&rows[i])
	}
	for id, want := range seen {
		got, ok := now[id]
		if !ok {
			t.Errorf("%s: committed row %d (%s %q) is gone", when, id, want.Role, want.Text)
			continue
		}
		if got != want {
			t.Errorf("%s: committed row %d changed:\n was %+v\n now %+v", when, id, want, got)
		}
	}
}

// sentAll checks that the continuation sent everything the killed turn
// had committed: each stored text and tool call is in the request.
func sentAll(t *testing.T, rows []store.Message, msgs []fakellm.Msg) {
	t.Helper()
	var wire strings.Builder
	calls := map[string]bool{}
	var seq []fakellm.Call // in wire order, for formats without call ids
	for _, m := range msgs {
		wire.WriteString(m.Text)
		wire.WriteByte('\n')
		for _, c := range m.ToolCalls {
			calls[c.ID] = true
			seq = append(seq, c)
		}
	}
	next := 0
	// sentInOrder matches a call by name and position, as Gemini (which
	// carries no call ids) does.
	sentInOrder := func(c llm.ToolCall) bool {
		for j := next; j < len(seq); j++ {
			if seq[j].Name == c.Name {
				next = j + 1
				return true
			}
		}
		return false
	}
	for _, r := range rows {
		if r.Kind.DisplayOnly() || r.Archived {
			continue
		}
		if txt := strings.TrimSpace(r.Text()); txt != "" && !strings.Contains(wire.String(), txt) {
			t.Errorf("stored %s row %d (%q) was not sent on resume", r.Role, r.Seq, txt)
		}
		for _, c := range r.ToolCalls {
			if !calls[c.ID] && !sentInOrder(c) {
				t.Errorf("stored tool call %s was not sent on resume", c.ID)
			}
		}
	}
}

// checkIntegrity runs SQLite's own consistency check on the file.
func checkIntegrity(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var res string
	if err := db.QueryRowContext(t.Context(), `PRAGMA integrity_check`).Scan(&res); err != nil {
		t.Fatalf("integrity check: %v", err)
	}
	if res != "ok" {
		t.Fatalf("integrity check: %s", res)
	}
}

// describePhase names where a turn stood by its last committed row.
func describePhase(rows []store.Message) string {
	if len(rows) == 0 {
		return "nothing saved"
	}
	last := rows[len(rows)-1]
	calls := 0
	for _, r := range rows {
		calls += len(r.ToolCalls)
	}
	switch {
	case last.Role == llm.RoleUser:
		return "user message"
	case last.Role == llm.RoleTool:
		return fmt.Sprintf("tool results (%d calls)", calls)
	case len(last.ToolCalls) > 0:
		return fmt.Sprintf("tool calls (%d calls)", calls)
	}
	return "final answer"
}
