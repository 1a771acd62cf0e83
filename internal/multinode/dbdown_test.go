//go:build unix

package multinode

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/pgtest"
	"github.com/talaria-agent/talaria/internal/testenv"
	"github.com/talaria-agent/talaria/turn"
)

// The database goes away under two serve nodes while a turn runs a tool:
// the turn ends persistence_failed with a message that says the server
// cannot be reached (its stream, on the node that ran it, still gets the
// turn_finished), and once the database is back both nodes take turns on
// that session again without being restarted.
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
	type outcome struct {
		res turn.Result
		err error
	}
	got := make(chan outcome, 1)
	go func() {
		res, err := c.streamTurn(ctx, c.nodes[0], sid, "slow-1")
		got <- outcome{res, err}
	}()
	if !testenv.Eventually(60*time.Second, func() bool { return hasToolCall(c.rows(sid)) }) {
		t.Fatal("the turn did not reach its tool call")
	}
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	var o outcome
	select {
	case o = <-got:
	case <-ctx.Done():
		t.Fatalf("the turn did not end with the database down; node 0:\n%s", c.nodes[0].stderr)
	}
	if o.err != nil || o.res.Exit != turn.ExitPersistenceFailed || o.res.Failure == nil ||
		!strings.Contains(o.res.Failure.Message, "cannot be reached") {
		t.Fatalf("turn with the database down: %v %s %+v; want persistence_failed saying the server cannot be reached", o.err, o.res.Exit, o.res.Failure)
	}
	t.Logf("failure: %s", o.res.Failure.Message)
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
