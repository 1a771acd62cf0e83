package postgres_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/pgtest"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/postgres"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// Node A dies in the middle of a turn (its connection pool closes while a
// tool runs: it can neither refresh its lease nor write). Node B, on the
// same database, asks for the session: it waits for A's lease to expire,
// takes the session over with a higher token, repairs the transcript A
// left (a tool call without its result) and runs its turn; the strict
// model server accepts the request. Everything A committed is still there,
// and A writes nothing after the takeover.
func TestNodeDiesMidTurnTakeoverAfterTTL(t *testing.T) {
	dsn := pgtest.New(t)
	srv := fakellm.New() // strict by default
	t.Cleanup(srv.Close)
	srv.SetDefault(func(req fakellm.Request) fakellm.Step {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == "user" && strings.Contains(last.Text, "block"):
			return fakellm.Calls(fakellm.ToolCall("hang", `{}`))
		case last.Role == "user":
			return fakellm.Text("resumed on node B")
		}
		return fakellm.Text("node A's answer")
	})
	started, release := make(chan struct{}), make(chan struct{})
	hang := testenv.MustFunc(tool.Info{Name: "hang", Description: "Blocks.", Parameters: testenv.ObjectSchema(`{}`), ReadOnly: true},
		func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			close(started)
			<-release
			return tool.Result{Content: "too late"}, nil
		})
	const ttl = time.Second
	newNode := func(holder string, st store.Store) *agent.Agent {
		ag, err := agent.New(agent.Config{
			Store:        st,
			Tools:        []tool.Tool{hang},
			Workspace:    t.TempDir(),
			Holder:       holder,
			LeaseTTL:     ttl,
			LeaseRefresh: ttl / 4,
			AdmitWait:    time.Minute,
			Config:       turn.Config{Routes: []turn.Route{{Provider: testenv.Provider(srv, "openai", "p"), Model: "gpt-4.1"}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return ag
	}
	stA, err := postgres.Open(t.Context(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stB := openAt(t, dsn)
	nodeA, nodeB := newNode("node-a", stA), newNode("node-b", stB)
	sess, err := nodeA.NewSession(t.Context(), agent.SessionOptions{Title: "takeover"})
	if err != nil {
		t.Fatal(err)
	}

	resA := make(chan turn.Result, 1)
	go func() {
		res, _ := nodeA.RunTurn(context.Background(), sess.ID, agent.Input{Text: "block on node A"})
		resA <- res
	}()
	<-started
	before, err := stB.Messages(t.Context(), sess.ID, store.MessageQuery{IncludeArchived: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = stA.Close() // node A dies

	res, err := nodeB.RunTurn(t.Context(), sess.ID, agent.Input{Text: "resume on node B"})
	if err != nil || res.Exit != turn.ExitCompleted || res.FinalText != "resumed on node B" {
		t.Fatalf("node B: %v, exit %s %q %+v", err, res.Exit, res.FinalText, res.Failure)
	}
	for _, v := range srv.Violations() {
		t.Errorf("strict model server: %s", v)
	}
	close(release)
	if a := <-resA; a.Exit == turn.ExitCompleted {
		t.Fatalf("node A's turn completed after it lost its database: %+v", a)
	}

	after, err := stB.Messages(t.Context(), sess.ID, store.MessageQuery{IncludeArchived: true})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[int64]store.Message{}
	for _, m := range after {
		byID[m.ID] = m
	}
	for _, m := range before {
		if got, ok := byID[m.ID]; !ok || got.Text() != m.Text() || len(got.ToolCalls) != len(m.ToolCalls) {
			t.Fatalf("committed row %d (%s %q) lost or changed by the takeover", m.ID, m.Role, m.Text())
		}
	}
	for _, m := range after {
		if m.Role == llm.RoleTool && m.Text() == "too late" || strings.Contains(m.Text(), "node A's answer") {
			t.Fatalf("node A wrote after the takeover: %+v", m)
		}
	}
	if last := after[len(after)-1]; last.Role != llm.RoleAssistant || last.Text() != "resumed on node B" {
		t.Fatalf("last row = %s %q", last.Role, last.Text())
	}
}
