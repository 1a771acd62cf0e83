//go:build unix

package multinode

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/pgtest"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/turn"
)

// The database goes away under two serve nodes while a turn runs a tool:
// the turn ends persistence_failed with a message that says the server
// cannot be reached (subscribers on the node that ran it still get the
// turn_finished; the other node cannot learn it without the database), and
// once the database is back both nodes take turns on that session again
// without being restarted.
func TestDatabaseDownUnderNodes(t *testing.T) {
	pg := pgtest.StartOwn(t)
	model := func(req fakellm.Request) fakellm.Step {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "user" && strings.HasPrefix(last.Text, "slow") {
			return fakellm.Calls(fakellm.ToolCall("shell", `{"command":"sleep 2"}`))
		}
		return toolThenAnswer(0)(req)
	}
	c := newClusterOn(t, pgtest.NewOn(t, pg.URL()), 2, 2*time.Second, model)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	sid, err := c.newSession(ctx, c.nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	// Subscribers on both nodes: with the database down, only the node
	// running the turn (whichever claimed it) can tell its own.
	var fs []*follower
	for _, nd := range c.nodes {
		f := c.follow(ctx, nd, sid, 1)
		f.opened(t)
		fs = append(fs, f)
	}
	slowID, err := c.send(ctx, c.nodes[0], sid, "slow-1")
	if err != nil {
		t.Fatal(err)
	}
	if !testenv.Eventually(60*time.Second, func() bool { return hasToolCall(c.rows(sid)) }) {
		t.Fatal("the turn did not reach its tool call")
	}
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	var res turn.Result
	var f *follower
	select {
	case <-fs[0].done:
		f = fs[0]
	case <-fs[1].done:
		f = fs[1]
	case <-ctx.Done():
		t.Fatalf("the turn did not end with the database down; nodes:\n%s\n%s", c.nodes[0].stderr, c.nodes[1].stderr)
	}
	res, ok := f.result(slowID)
	if !ok {
		t.Fatalf("the stream on node %d ended without the turn's end: %v", f.node, f.err)
	}
	if res.Exit != turn.ExitPersistenceFailed || res.Failure == nil || !strings.Contains(res.Failure.Message, "cannot be reached") {
		t.Fatalf("turn with the database down: %s %+v; want persistence_failed saying the server cannot be reached", res.Exit, res.Failure)
	}
	t.Logf("failure: %s", res.Failure.Message)
	if err := pg.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	// Back: both nodes run turns on the session again.
	for i, nd := range c.nodes {
		res, err := c.streamTurn(ctx, nd, sid, "after-"+string(rune('a'+i)))
		if err != nil || res.Exit != turn.ExitCompleted || res.FinalText != "answer: after-"+string(rune('a'+i)) {
			t.Fatalf("turn on node %d after the restart: %v %s %q %+v", nd.i, err, res.Exit, res.FinalText, res.Failure)
		}
	}
	c.checkWire(t)
}
