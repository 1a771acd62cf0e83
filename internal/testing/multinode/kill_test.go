//go:build unix

package multinode

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// A node is killed with kill -9 while its turns run a tool, with a message
// queued behind each. After the lease TTL (not before) the other nodes take
// those sessions over: with handoff: interrupt (TestHandoff* has the
// default, continue) the cut-off turn is marked interrupted (not re-run;
// its stream gets a turn_finished), the transcript is repaired on load, and
// the queued message runs. The sessions the dead node was not running just
// carry on. Every committed row is still there, none is written twice, and
// subscribers on the surviving nodes see both turns of every session end.
func TestKillNodeMidTurn(t *testing.T) {
	const ttl = 2 * time.Second
	model := func(req fakellm.Request) fakellm.Step {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "user" && strings.HasPrefix(last.Text, "slow") {
			return fakellm.Calls(fakellm.ToolCall("shell", `{"command":"sleep 4"}`))
		}
		return toolThenAnswer(0)(req)
	}
	c := newClusterConfig(t, 3, ttl, model, "serve:\n  handoff: interrupt\n")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	const n = 6
	sids := make([]string, n)
	slow := make([]string, n)
	for i := range sids {
		id, err := c.newSession(ctx, c.nodes[i%3])
		if err != nil {
			t.Fatal(err)
		}
		sids[i] = id
		if slow[i], err = c.send(ctx, c.nodes[(i+1)%3], id, fmt.Sprintf("slow-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// Every slow turn has its tool call stored (the tool runs); then queue
	// a message behind each, on another node.
	if !testenv.Eventually(60*time.Second, func() bool {
		for _, id := range sids {
			if !hasToolCall(c.rows(id)) {
				return false
			}
		}
		return true
	}) {
		t.Fatal("the slow turns did not reach their tool calls")
	}
	after := make([]string, n)
	for i, id := range sids {
		var err error
		if after[i], err = c.send(ctx, c.nodes[(i+2)%3], id, fmt.Sprintf("after-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	victim, running := c.busiestNode(t)
	before := map[string][]store.Message{}
	for _, id := range sids {
		before[id] = c.rows(id)
	}
	// The node starting in the dead one's place must not take the turns
	// the live nodes are running for cut off.
	killed := c.replace(t, victim)
	t.Logf("killed node %d, which ran %d of %d turns", victim.i, len(running), n)

	// Subscribers from the start on the surviving nodes.
	var survivors []*node
	for _, nd := range c.nodes {
		if nd != victim {
			survivors = append(survivors, nd)
		}
	}
	fs := make([]*follower, n)
	for i, id := range sids {
		fs[i] = c.follow(ctx, survivors[i%len(survivors)], id, 2)
	}
	for i, f := range fs {
		select {
		case <-f.done:
		case <-ctx.Done():
			t.Fatalf("session %s: the subscriber saw %d of 2 turns end; rows %v", sids[i], len(f.finished), describe(c.rows(sids[i])))
		}
	}

	interrupted := 0
	for i, id := range sids {
		rows := c.rows(id)
		cut := running[id]
		// Nothing committed is lost: every row from before the kill is
		// still there, unchanged.
		have := map[int64]store.Message{}
		for _, r := range rows {
			have[r.ID] = r
		}
		for _, r := range before[id] {
			got, ok := have[r.ID]
			if !ok || got.Seq != r.Seq || got.Text() != r.Text() || got.TurnID != r.TurnID {
				t.Errorf("session %s: row %d (seq %d) committed before the kill is gone or changed", id, r.ID, r.Seq)
			}
		}
		// Nothing written twice: one user row per turn.
		users := map[string]int{}
		for _, r := range rows {
			if r.Role == llm.RoleUser && r.Kind == store.RowNormal {
				users[r.TurnID]++
			}
		}
		if users[slow[i]] != 1 || users[after[i]] != 1 || len(users) != 2 {
			t.Errorf("session %s: user rows per turn %v, want one for each of the two turns", id, users)
		}
		// Each turn either completed with its answer or — only on the
		// dead node — was cut off: marked interrupted once, not re-run.
		prompts := map[string]string{slow[i]: fmt.Sprintf("slow-%d", i), after[i]: fmt.Sprintf("after-%d", i)}
		for _, tid := range []string{slow[i], after[i]} {
			res, _ := fs[i].result(tid)
			failures, answers := 0, 0
			for _, r := range rows {
				// The cut-off mark: display-only, or an interrupted answer
				// when the turn had stored nothing after its user row.
				if r.TurnID == tid && (r.Kind == store.RowFailure || r.Kind == store.RowInterrupted) {
					failures++
				}
				if r.TurnID == tid && r.Role == llm.RoleAssistant && r.Kind == store.RowNormal && strings.HasPrefix(r.Text(), "answer: ") {
					answers++
				}
			}
			switch {
			case res.Exit == turn.ExitCompleted && res.FinalText == "answer: "+prompts[tid] && failures == 0 && answers == 1:
			case res.Exit == turn.ExitInterrupted && cut && failures == 1 && answers == 0:
				interrupted++
				if tid == after[i] {
					break
				}
				// Taken over only once the dead node's lease had expired:
				// the queued turn's rows come at least most of a TTL after
				// the kill (a lease is renewed every TTL/3).
				for _, r := range rows {
					if r.TurnID == after[i] && r.CreatedAt.Before(killed.Add(ttl/2)) {
						t.Errorf("session %s: the queued turn wrote at %v, before the dead node's lease could expire (killed %v)", id, r.CreatedAt, killed)
					}
				}
			default:
				t.Errorf("session %s (on the dead node: %v): turn %s ended %s %q with %d failure rows and %d answers; want completed with one answer, or (dead node) interrupted with one failure row, not re-run",
					id, cut, tid, res.Exit, res.FinalText, failures, answers)
			}
		}
	}
	if interrupted == 0 {
		t.Error("no turn was cut off by the kill")
	}
	c.queueDrains(t)
	c.checkWire(t)
}

func hasToolCall(rows []store.Message) bool {
	for _, r := range rows {
		if len(r.ToolCalls) > 0 {
			return true
		}
	}
	return false
}

// busiestNode is the node holding the most live turn leases, with the
// sessions it holds.
func (c *cluster) busiestNode(t *testing.T) (*node, map[string]bool) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), c.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT session_id, holder FROM leases WHERE NOT released`)
	if err != nil {
		t.Fatal(err)
	}
	held := map[int]map[string]bool{}
	for rows.Next() {
		var sid, holder string
		if err := rows.Scan(&sid, &holder); err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(holder, ":")
		if len(parts) < 2 {
			t.Fatalf("lease holder %q is not host:pid:random", holder)
		}
		pid, _ := strconv.Atoi(parts[len(parts)-2])
		if held[pid] == nil {
			held[pid] = map[string]bool{}
		}
		held[pid][sid] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var best *node
	for _, nd := range c.nodes {
		if best == nil || len(held[nd.cmd.Process.Pid]) > len(held[best.cmd.Process.Pid]) {
			best = nd
		}
	}
	if len(held[best.cmd.Process.Pid]) == 0 {
		t.Fatalf("no node holds a lease: %v", held)
	}
	return best, held[best.cmd.Process.Pid]
}
