//go:build unix

package multinode

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// What the kill tests share: a model whose turns reach each kill point, a
// way to find and kill the node running a session's turn, a way to hold a
// node inside write_file, and the checks every continued turn must pass.

// Kill points: where in its turn the node running it dies.
const (
	killStream      = "stream"       // the model's answer streams
	killRead        = "read"         // inside a read-only MCP tool
	killWriteBefore = "write_before" // inside write_file, before its rename
	killWriteAfter  = "write_after"  // inside write_file, the rename done, its result not stored
	killEffect      = "effect"       // inside a shell command (appends, then sleeps)
	killBetween     = "between"      // a tool round stored, the next model call pending
)

var killPoints = []string{killStream, killRead, killWriteBefore, killWriteAfter, killEffect, killBetween}

// killModel answers by the turn's prompt ("<kind>-<n>", its first user
// text) and how many tool rounds the request already has. Every kind's
// turn appends one "x" to <prompt>.txt with a shell command exactly once
// (the counter), and ends "answer: <prompt>".
type killModel struct {
	mu    sync.Mutex
	calls map[string]int
	gates map[string]chan struct{} // a held call waits for its gate
	held  map[string]bool          // the held call has arrived
	told  map[string]string        // the tool result a write turn's model saw last
}

func newKillModel() *killModel {
	return &killModel{calls: map[string]int{}, gates: map[string]chan struct{}{}, held: map[string]bool{}, told: map[string]string{}}
}

func (m *killModel) gate(prompt string) chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.gates[prompt]
	if g == nil {
		g = make(chan struct{})
		m.gates[prompt] = g
	}
	return g
}

// release lets the prompt's held call go on.
func (m *killModel) release(prompt string) {
	g := m.gate(prompt)
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-g:
	default:
		close(g)
	}
}

// hold blocks the prompt's first held call until release; later ones
// pass.
func (m *killModel) hold(prompt string) {
	g := m.gate(prompt)
	m.mu.Lock()
	first := !m.held[prompt]
	m.held[prompt] = true
	m.mu.Unlock()
	if first {
		select {
		case <-g:
		case <-time.After(3 * time.Minute):
		}
	}
}

func (m *killModel) arrived(prompt string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held[prompt]
}

func (m *killModel) called(prompt string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[prompt]
}

func (m *killModel) step(req fakellm.Request) fakellm.Step {
	prompt, rounds := "", 0
	for _, msg := range req.Messages {
		if msg.Role == "user" && prompt == "" {
			prompt = msg.Text
		}
		if msg.Role == "assistant" && len(msg.ToolCalls) > 0 {
			rounds++
		}
	}
	m.mu.Lock()
	m.calls[prompt]++
	n := m.calls[prompt]
	m.mu.Unlock()
	last := req.Messages[len(req.Messages)-1]
	kind, _, _ := strings.Cut(prompt, "-")
	counter := fakellm.Calls(fakellm.ToolCall("shell", `{"command":"echo x >> `+prompt+`.txt"}`))
	answer := fakellm.Text("answer: " + prompt)
	switch kind {
	case killStream:
		switch {
		case n == 1: // held open: the node dies while it streams
			return fakellm.Text(strings.Repeat("streaming words ", 200)).WithChunkDelay(200 * time.Millisecond)
		case rounds == 0:
			return counter
		}
		return answer
	case killRead:
		switch rounds {
		case 0:
			return counter
		case 1:
			return fakellm.Calls(fakellm.ToolCall("t__slow", `{"ms":5000}`))
		}
		return answer
	case killWriteBefore, killWriteAfter:
		switch rounds {
		case 0:
			return counter
		case 1:
			m.hold(prompt) // until the test holds the node's renames
			return fakellm.Calls(fakellm.ToolCall("write_file", `{"path":"`+prompt+`.out","content":"after\n"}`))
		}
		m.mu.Lock()
		m.told[prompt] = last.Text
		m.mu.Unlock()
		return answer
	case killEffect:
		if rounds == 0 {
			return fakellm.Calls(fakellm.ToolCall("shell", `{"command":"echo x >> `+prompt+`.txt && sleep 60"}`))
		}
		return answer
	case killBetween:
		if rounds == 0 {
			return counter
		}
		m.hold(prompt) // the first such call is the one its node dies in
		return answer
	case "bound":
		// Every call kills its node (the test does): a tool that never ends.
		if last.Role == "tool" && !strings.Contains(last.Text, "handoff") && n > 1 {
			return answer
		}
		return fakellm.Calls(fakellm.ToolCall("shell", `{"command":"echo x >> `+prompt+`.txt && sleep 60"}`))
	case "plain":
		if rounds == 0 {
			return fakellm.Calls(fakellm.ToolCall("read_file", `{"path":"a.txt"}`))
		}
		return answer
	}
	return fakellm.Text("unexpected prompt " + prompt)
}

// killCluster starts three nodes (lease TTL ttl, config extra) with an MCP
// server offering a read-only slow tool, the model m.
func killCluster(t *testing.T, ttl time.Duration, m *killModel, extra string) *cluster {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcptestserver")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/talaria-agent/talaria/internal/testing/mcptest/mcptestserver").CombinedOutput(); err != nil {
		t.Fatalf("build mcptestserver: %v\n%s", err, out)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	// The server runs in the nodes' sandbox, which sees the workspace.
	cfg := "mcp_servers:\n  t:\n    command: {WS}/.mcptestserver\n    env: {MCPTEST_DIR: {WS}/.mcp}\n" + extra
	return newClusterConfigPre(t, 3, ttl, m.step, cfg, func(ws string) {
		if err := os.WriteFile(filepath.Join(ws, ".mcptestserver"), b, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(ws, ".mcp"), 0o755); err != nil {
			t.Fatal(err)
		}
	})
}

// holder is the node whose process holds the session's live lease.
func (c *cluster) holder(t *testing.T, sid string) *node {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), c.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var h string
	if err := conn.QueryRow(context.Background(), `SELECT holder FROM leases WHERE session_id = $1 AND NOT released`, sid).Scan(&h); err != nil {
		t.Fatalf("lease of %s: %v", sid, err)
	}
	parts := strings.Split(h, ":")
	pid, _ := strconv.Atoi(parts[len(parts)-2])
	for _, nd := range c.nodes {
		if !nd.exited() && nd.cmd.Process.Pid == pid {
			return nd
		}
	}
	t.Fatalf("no live node holds %s's lease (%s)", sid, h)
	return nil
}

// live is the nodes still running, less not.
func (c *cluster) live(not ...*node) []*node {
	var out []*node
	for _, nd := range c.nodes {
		skip := nd.exited()
		for _, n := range not {
			skip = skip || nd == n
		}
		if !skip {
			out = append(out, nd)
		}
	}
	return out
}

// other is a live node that is none of not.
func (c *cluster) other(not ...*node) *node {
	if l := c.live(not...); len(l) > 0 {
		return l[0]
	}
	return nil
}

// startedCall reports whether the session's ledger has a call of tool
// (any tool: "") started and not finished.
func (c *cluster) startedCall(sid, tool string) bool {
	recs, err := c.reader.ToolCalls(context.Background(), sid, "")
	if err != nil {
		return false
	}
	for _, r := range recs {
		if r.State == store.ToolCallStarted && (tool == "" || r.Tool == tool) {
			return true
		}
	}
	return false
}

// replace kills nd with kill -9 and starts a node in its place, so the
// cluster keeps its size. It returns the time of the kill.
func (c *cluster) replace(t *testing.T, nd *node) time.Time {
	t.Helper()
	killed := time.Now()
	nd.kill(t)
	c.nodes = append(c.nodes, c.start(talariaBin(t), len(c.nodes)))
	return killed
}

// isHandoff reports whether ev is the status event a handoff publishes.
func isHandoff(ev sseEvent) bool {
	return ev.Type == "status" && strings.Contains(string(ev.Data), `"kind":"handoff"`)
}

// awaitHandoff waits until f has seen a handoff status and returns the
// time from killed to its arrival. A stream that finished is read once
// more: the status may have come with the rest of a quick turn between
// two looks.
func awaitHandoff(ctx context.Context, t *testing.T, f *follower, killed time.Time) time.Duration {
	t.Helper()
	at := func() (time.Time, bool) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.handoffAt, !f.handoffAt.IsZero()
	}
	for {
		if when, ok := at(); ok {
			return when.Sub(killed)
		}
		select {
		case <-f.done:
			if when, ok := at(); ok {
				return when.Sub(killed)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			t.Fatalf("the stream ended without a handoff status: %v; results %+v", f.err, f.finished)
		case <-ctx.Done():
			t.Fatal("no handoff status")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// checkContinuous checks one subscriber's stream across a turn's handoffs:
// ids only grow, handoffs handoff statuses, at most one turn_started for
// tid.
func checkContinuous(t *testing.T, f *follower, tid string, handoffs int) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var statuses, starts int
	last := int64(0)
	for _, ev := range f.events {
		if ev.ID <= last {
			t.Errorf("event id %d after %d: the stream is not continuous", ev.ID, last)
		}
		last = ev.ID
		if isHandoff(ev) {
			statuses++
		}
		if ev.Type == "turn_started" && ev.TurnID == tid {
			starts++
		}
	}
	if statuses != handoffs || starts > 1 {
		t.Errorf("the stream had %d handoff statuses and %d turn_started; want %d and at most 1", statuses, starts, handoffs)
	}
}

// checkResumes subscribes on nd from the event just before the handoff
// status f saw and checks the rest comes back exactly (Last-Event-ID
// across the handoff).
func (c *cluster) checkResumes(ctx context.Context, t *testing.T, nd *node, sid string, f *follower) {
	t.Helper()
	f.mu.Lock()
	rec := append([]sseEvent(nil), f.events...)
	f.mu.Unlock()
	at := 0
	for i, ev := range rec {
		if isHandoff(ev) && i > 0 {
			at = i - 1
			break
		}
	}
	var got []sseEvent
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := c.subscribe(rctx, nd, sid, rec[at].ID, func(ev sseEvent) bool {
		got = append(got, ev)
		return ev.ID < rec[len(rec)-1].ID
	})
	if want := rec[at+1:]; err != nil || !sameEvents(got, want) {
		t.Errorf("resuming after %d (before the handoff) on node %d: %d events (%v), want the %d recorded after it", rec[at].ID, nd.i, len(got), err, len(want))
	}
}

// checkPairs checks a session's stored rows answer every tool call of the
// turn exactly once and hold one user row and one answer.
func checkPairs(t *testing.T, rows []store.Message, prompt string) {
	t.Helper()
	calls, results := map[string]int{}, map[string]int{}
	var users, answers int
	for _, r := range rows {
		if r.Kind.DisplayOnly() || r.Archived {
			continue
		}
		for _, c := range r.ToolCalls {
			calls[c.ID]++
		}
		switch {
		case r.Role == llm.RoleTool:
			results[r.ToolCallID]++
		case r.Role == llm.RoleUser && r.Kind == store.RowNormal:
			users++
		case r.Role == llm.RoleAssistant && r.Kind == store.RowNormal && r.Text() == "answer: "+prompt:
			answers++
		}
	}
	for id, n := range calls {
		if n != 1 || results[id] != 1 {
			t.Errorf("call %s: %d calls, %d results; want one each: %v", id, n, results[id], describe(rows))
		}
	}
	if len(results) != len(calls) || users != 1 || answers != 1 {
		t.Errorf("%d results for %d calls, %d user rows, %d answers; want one user row and one answer: %v", len(results), len(calls), users, answers, describe(rows))
	}
}

// killTurn runs one turn of kind and kills -9 its node at that kill point
// (a replacement node starts); the turn must continue on another node and
// complete: one continuous stream on a third node (Last-Event-ID works
// across the handoff), a strictly valid transcript, the counter appended
// exactly once, and what the kill point owes (a read-only tool re-run, a
// command not re-run, write_file's file state told to the model). It
// returns the time from the kill to the handoff status on the stream.
func (c *cluster) killTurn(ctx context.Context, t *testing.T, m *killModel, kind string, rnd *rand.Rand) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	prompt := fmt.Sprintf("%s-%d", kind, time.Now().UnixNano())
	out := filepath.Join(c.ws, prompt+".out")
	existed := rnd.IntN(2) == 0
	if existed {
		if err := os.WriteFile(out, []byte("before\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pick := func(not ...*node) *node {
		l := c.live(not...)
		return l[rnd.IntN(len(l))]
	}
	sid, err := c.newSession(ctx, pick())
	if err != nil {
		t.Fatal(err)
	}
	tid, err := c.send(ctx, pick(), sid, prompt)
	if err != nil {
		t.Fatal(err)
	}
	counter := func() string {
		b, _ := os.ReadFile(filepath.Join(c.ws, prompt+".txt"))
		return string(b)
	}
	reached := func(ok func() bool) {
		t.Helper()
		if !testenv.Eventually(time.Minute, ok) {
			t.Fatalf("the turn did not reach its kill point %s; rows %v", kind, describe(c.rows(sid)))
		}
	}
	var victim *node
	switch kind {
	case killStream:
		reached(func() bool { return m.called(prompt) > 0 })
	case killRead:
		reached(func() bool { return c.startedCall(sid, "t__slow") })
	case killWriteBefore, killWriteAfter:
		reached(func() bool { return m.arrived(prompt) })
		victim = c.holder(t, sid)
		victim.tracer = testenv.HoldRenames(t, victim.cmd.Process.Pid, kind == killWriteAfter)
		m.release(prompt)
		// Stopped in the rename with the file already replaced (after) or
		// not (before): a delay_exit rename also passes a brief stop on
		// its way in, before it takes effect.
		reached(func() bool {
			b, _ := os.ReadFile(out)
			return testenv.InRename(victim.cmd.Process.Pid) && (kind == killWriteAfter) == (string(b) == "after\n")
		})
	case killEffect:
		reached(func() bool { return counter() != "" })
	case killBetween:
		reached(func() bool { return m.arrived(prompt) })
	}
	if victim == nil {
		victim = c.holder(t, sid)
	}
	f := c.follow(ctx, pick(victim), sid, 1)
	f.opened(t)
	killed := c.replace(t, victim)
	m.release(prompt)
	moved := awaitHandoff(ctx, t, f, killed)
	select {
	case <-f.done:
	case <-ctx.Done():
		t.Fatalf("the turn did not finish after the handoff; rows %v", describe(c.rows(sid)))
	}
	if res, _ := f.result(tid); res.Exit != turn.ExitCompleted || res.FinalText != "answer: "+prompt {
		t.Fatalf("result %s %q: %s", res.Exit, res.FinalText, res.Explanation)
	}
	checkContinuous(t, f, tid, 1)
	c.checkResumes(ctx, t, pick(c.nodes[f.node]), sid, f)
	rows := c.rows(sid)
	checkPairs(t, rows, prompt)
	if got := counter(); got != "x\n" {
		t.Errorf("the counter command ran %d times; want exactly once", strings.Count(got, "x"))
	}
	var uncertain []string
	for _, r := range rows {
		if r.Role == llm.RoleTool && strings.HasPrefix(r.Text(), "[handoff:") {
			uncertain = append(uncertain, r.Text())
		}
	}
	recs, err := c.reader.ToolCalls(ctx, sid, tid)
	if err != nil {
		t.Fatal(err)
	}
	switch kind {
	case killEffect:
		if len(uncertain) != 1 || !strings.Contains(uncertain[0], "may or may not have taken effect") {
			t.Errorf("results %q; want one saying the command may or may not have taken effect", uncertain)
		}
	case killRead:
		for _, r := range recs {
			if r.State != store.ToolCallFinished {
				t.Errorf("ledger %+v: want every call (the read-only one re-run) finished", r)
			}
		}
		if len(uncertain) != 0 {
			t.Errorf("results %q; want the read-only call re-run", uncertain)
		}
	case killWriteBefore, killWriteAfter:
		verdict, content := "is exactly as it was before the call: the call did not take effect", ""
		if existed {
			content = "before\n"
		}
		if kind == killWriteAfter {
			verdict, content = "changed after the call started: the call most likely took effect", "after\n"
		}
		b, err := os.ReadFile(out)
		if string(b) != content || (content == "") != os.IsNotExist(err) {
			t.Errorf("the file has %q (%v); want %q: written at most once, by the node that died", b, err, content)
		}
		if len(uncertain) != 1 || !strings.Contains(uncertain[0], verdict) {
			t.Errorf("results %q; want one saying the file %s", uncertain, verdict)
		}
		m.mu.Lock()
		told := m.told[prompt]
		m.mu.Unlock()
		if !strings.Contains(told, verdict) {
			t.Errorf("the model was told %q; want that the file %s", told, verdict)
		}
	default:
		if len(uncertain) != 0 {
			t.Errorf("results %q; want none uncertain: the kill came outside a tool", uncertain)
		}
	}
	evs, err := c.reader.TurnEvents(ctx, sid, tid)
	if err != nil {
		t.Fatal(err)
	}
	handoffs := 0
	for _, e := range evs {
		if e.Kind == "handoff" {
			handoffs++
		}
	}
	if handoffs != 1 {
		t.Errorf("the turn's event log has %d handoffs; want 1", handoffs)
	}
	return moved
}
