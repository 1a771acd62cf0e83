//go:build unix

package multinode

import (
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/talaria-agent/talaria/internal/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// handoffModel answers by the turn's prompt (its first user text): a
// prompt's first call does what the kill point needs, a tool result or a
// repeated call gets "answer: <prompt>".
type handoffModel struct {
	mu    sync.Mutex
	calls map[string]int
}

func (m *handoffModel) step(req fakellm.Request) fakellm.Step {
	prompt := ""
	for _, msg := range req.Messages {
		if msg.Role == "user" {
			prompt = msg.Text
		}
	}
	m.mu.Lock()
	m.calls[prompt]++
	n := m.calls[prompt]
	m.mu.Unlock()
	last := req.Messages[len(req.Messages)-1]
	kind, _, _ := strings.Cut(prompt, "-")
	switch {
	case kind == "bound" && last.Role == "tool" && !strings.Contains(last.Text, "handoff") && n > 1:
		return fakellm.Text("answer: " + prompt)
	case kind == "bound":
		// Every call kills its node (the test does): a tool that never ends.
		return fakellm.Calls(fakellm.ToolCall("shell", `{"command":"echo x >> `+prompt+`.txt && sleep 60"}`))
	case last.Role == "tool" || n > 1 && kind == "stream":
		return fakellm.Text("answer: " + prompt)
	case kind == "stream":
		// Held open: the node dies while it streams.
		return fakellm.Text(strings.Repeat("streaming words ", 200)).WithChunkDelay(200 * time.Millisecond)
	case kind == "read":
		return fakellm.Calls(fakellm.ToolCall("t__slow", `{"ms":3000}`))
	case kind == "effect":
		return fakellm.Calls(fakellm.ToolCall("shell", `{"command":"echo x >> `+prompt+`.txt && sleep 60"}`))
	}
	return fakellm.Text("unexpected prompt " + prompt)
}

// handoffCluster starts three nodes with an MCP server offering a
// read-only slow tool, TTL ttl.
func handoffCluster(t *testing.T, ttl time.Duration, m *handoffModel) *cluster {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcptestserver")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/talaria-agent/talaria/internal/mcptest/mcptestserver").CombinedOutput(); err != nil {
		t.Fatalf("build mcptestserver: %v\n%s", err, out)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	// The server runs in the nodes' sandbox, which sees the workspace.
	cfg := "mcp_servers:\n  t:\n    command: {WS}/.mcptestserver\n    env: {MCPTEST_DIR: {WS}/.mcp}\n"
	c := newClusterConfigPre(t, 3, ttl, m.step, cfg, func(ws string) {
		if err := os.WriteFile(filepath.Join(ws, ".mcptestserver"), b, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(ws, ".mcp"), 0o755); err != nil {
			t.Fatal(err)
		}
	})
	return c
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

// other is a live node that is none of not.
func (c *cluster) other(not ...*node) *node {
	for _, nd := range c.nodes {
		skip := nd.exited()
		for _, n := range not {
			skip = skip || nd == n
		}
		if !skip {
			return nd
		}
	}
	return nil
}

// started reports whether the session's ledger has a started call.
func (c *cluster) started(sid string) bool {
	recs, err := c.reader.ToolCalls(context.Background(), sid, "")
	if err != nil {
		return false
	}
	for _, r := range recs {
		if r.State == store.ToolCallStarted {
			return true
		}
	}
	return false
}

// TestHandoffContinuesTurn kills -9 the node running a turn (a) while its
// model call streams, (b) inside a read-only tool, (c) inside a shell
// command that appends to a file: after the lease TTL another node
// continues the turn from its last durable point and completes it; the
// read-only tool runs again, the command does not (its result says it may
// or may not have taken effect; the file was appended to exactly once);
// the transcript passes strict validation; and a subscriber on a third node
// sees one continuous stream: one handoff status, no second turn_started,
// ids only growing, the turn's result.
func TestHandoffContinuesTurn(t *testing.T) {
	const ttl = 2 * time.Second
	m := &handoffModel{calls: map[string]int{}}
	c := handoffCluster(t, ttl, m)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	for _, kind := range []string{"stream", "read", "effect"} {
		t.Run(kind, func(t *testing.T) {
			prompt := fmt.Sprintf("%s-%d", kind, time.Now().UnixNano())
			sid, err := c.newSession(ctx, c.other())
			if err != nil {
				t.Fatal(err)
			}
			tid, err := c.send(ctx, c.other(), sid, prompt)
			if err != nil {
				t.Fatal(err)
			}
			ready := func() bool {
				switch kind {
				case "stream":
					m.mu.Lock()
					defer m.mu.Unlock()
					return m.calls[prompt] > 0
				case "effect":
					b, _ := os.ReadFile(filepath.Join(c.ws, prompt+".txt"))
					return len(b) > 0
				}
				return c.started(sid)
			}
			if !testenv.Eventually(60*time.Second, ready) {
				t.Fatalf("the turn did not reach its kill point; rows %v\n%s", describe(c.rows(sid)), c.nodes[0].stderr)
			}
			victim := c.holder(t, sid)
			f := c.follow(ctx, c.other(victim), sid, 1)
			f.opened(t)
			killed := time.Now()
			victim.kill(t)
			c.nodes = append(c.nodes, c.start(talariaBin(t), len(c.nodes)))
			var moved time.Duration
			seen := func() bool {
				f.mu.Lock()
				defer f.mu.Unlock()
				for _, ev := range f.events {
					if ev.Type == "status" && strings.Contains(string(ev.Data), `"kind":"handoff"`) {
						return true
					}
				}
				return false
			}
			for moved == 0 {
				ended := false
				select {
				case <-f.done:
					ended = true
				default:
				}
				if seen() {
					moved = time.Since(killed)
					break
				}
				if ended {
					f.mu.Lock()
					t.Fatalf("the stream ended without a handoff status: %v; results %+v", f.err, f.finished)
				}
				select {
				case <-f.done:
				case <-ctx.Done():
					t.Fatal("no handoff status")
				case <-time.After(10 * time.Millisecond):
				}
			}
			t.Logf("kill -> handoff status on the stream: %v (lease TTL %v)", moved.Round(time.Millisecond), ttl)
			select {
			case <-f.done:
			case <-ctx.Done():
				t.Fatalf("the turn did not finish after the handoff; rows %v", describe(c.rows(sid)))
			}
			res, _ := f.result(tid)
			if res.Exit != turn.ExitCompleted || res.FinalText != "answer: "+prompt {
				t.Fatalf("result %s %q: %s", res.Exit, res.FinalText, res.Explanation)
			}
			f.mu.Lock()
			var statuses, starts int
			last := int64(0)
			for _, ev := range f.events {
				if ev.ID <= last {
					t.Errorf("event id %d after %d: the stream is not continuous", ev.ID, last)
				}
				last = ev.ID
				if ev.Type == "status" && strings.Contains(string(ev.Data), `"kind":"handoff"`) {
					statuses++
				}
				if ev.Type == "turn_started" && ev.TurnID == tid {
					starts++
				}
			}
			f.mu.Unlock()
			if statuses != 1 || starts > 1 {
				t.Errorf("the stream had %d handoff statuses and %d turn_started; want 1 and at most 1", statuses, starts)
			}
			rows := c.rows(sid)
			var users, answers, uncertain int
			for _, r := range rows {
				switch {
				case r.Role == llm.RoleUser && r.Kind == store.RowNormal:
					users++
				case r.Role == llm.RoleAssistant && r.Kind == store.RowNormal && strings.HasPrefix(r.Text(), "answer: "):
					answers++
				case r.Role == llm.RoleTool && strings.Contains(r.Text(), "may or may not have taken effect"):
					uncertain++
				}
			}
			if users != 1 || answers != 1 {
				t.Errorf("%d user rows, %d answers; want one each: %v", users, answers, describe(rows))
			}
			recs, err := c.reader.ToolCalls(ctx, sid, tid)
			if err != nil {
				t.Fatal(err)
			}
			switch kind {
			case "effect":
				b, _ := os.ReadFile(filepath.Join(c.ws, prompt+".txt"))
				if string(b) != "x\n" || uncertain != 1 {
					t.Errorf("the command ran %d times (want exactly once) and got %d uncertain results (want 1)", strings.Count(string(b), "x"), uncertain)
				}
			case "read":
				if len(recs) != 1 || recs[0].State != store.ToolCallFinished || uncertain != 0 {
					t.Errorf("ledger %+v, %d uncertain results; want the read-only call re-run and finished", recs, uncertain)
				}
			}
			evs, err := c.reader.TurnEvents(ctx, sid, tid)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, e := range evs {
				kinds = append(kinds, e.Kind)
			}
			if !strings.Contains(strings.Join(kinds, ","), "handoff") {
				t.Errorf("the turn's event log %v has no handoff", kinds)
			}
		})
	}
	c.queueDrains(t)
	c.checkWire(t)
}

// TestHandoffLimit: a turn whose every tool call kills its node is handed
// off handoff_max (2) times and then, at the third death, ends
// handoff_limit instead of hopping on; each call ran exactly once.
func TestHandoffLimit(t *testing.T) {
	const ttl = 2 * time.Second
	m := &handoffModel{calls: map[string]int{}}
	c := handoffCluster(t, ttl, m)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	prompt := fmt.Sprintf("bound-%d", time.Now().UnixNano())
	sid, err := c.newSession(ctx, c.other())
	if err != nil {
		t.Fatal(err)
	}
	tid, err := c.send(ctx, c.other(), sid, prompt)
	if err != nil {
		t.Fatal(err)
	}
	count := filepath.Join(c.ws, prompt+".txt")
	var f *follower
	for death := 1; death <= 3; death++ {
		if !testenv.Eventually(60*time.Second, func() bool {
			b, _ := os.ReadFile(count)
			return strings.Count(string(b), "x") == death
		}) {
			t.Fatalf("death %d: the command did not run; rows %v", death, describe(c.rows(sid)))
		}
		victim := c.holder(t, sid)
		if f == nil || f.node == victim.i {
			f = c.follow(ctx, c.other(victim), sid, 1)
			f.opened(t)
		}
		victim.kill(t)
		c.nodes = append(c.nodes, c.start(talariaBin(t), len(c.nodes)))
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		t.Fatalf("the turn did not end; rows %v", describe(c.rows(sid)))
	}
	res, _ := f.result(tid)
	if res.Exit != turn.ExitHandoffLimit || !strings.Contains(res.Explanation, "handoff_max") {
		t.Fatalf("result %s: %s; want handoff_limit", res.Exit, res.Explanation)
	}
	time.Sleep(ttl) // no node may run it again
	if b, _ := os.ReadFile(count); strings.Count(string(b), "x") != 3 {
		t.Fatalf("the command ran %d times; want 3 (once per node, never re-run)", strings.Count(string(b), "x"))
	}
	evs, err := c.reader.TurnEvents(ctx, sid, tid)
	if err != nil {
		t.Fatal(err)
	}
	handoffs := 0
	for _, e := range evs {
		if e.Kind == "handoff" {
			handoffs++
			var h turn.Handoff
			if err := json.Unmarshal([]byte(e.Detail), &h); err != nil || h.Max != 2 {
				t.Errorf("handoff event %q: %v", e.Detail, err)
			}
		}
	}
	if handoffs != 2 {
		t.Fatalf("%d handoffs recorded; want 2", handoffs)
	}
	c.queueDrains(t)
	c.checkWire(t)
}
