package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/pgtest"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// The database server stops in the middle of a turn (a tool stops it) and
// comes back: that turn fails with persistence_failed naming the cause,
// a turn while it is down fails the same way, and once it is back the same
// agent, on the same store, runs turns again without a restart; the
// transcript stays valid (the strict model server checks
// it) and keeps every committed row.
func TestDatabaseRestartDuringTurns(t *testing.T) {
	srv := pgtest.StartOwn(t)
	st := openAt(t, pgtest.NewOn(t, srv.URL()))
	stopDB := testenv.MustFunc(tool.Info{Name: "stop_db", Description: "Stops the database server.",
		Parameters: testenv.ObjectSchema(`{}`), ReadOnly: true},
		func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			if err := srv.Stop(); err != nil {
				return tool.Result{}, err
			}
			return tool.Result{Content: "stopped"}, nil
		})
	// The strict server rejects any request whose transcript is malformed,
	// so the turn after the restart also proves the repaired transcript.
	env := testenv.New(t, testenv.Options{ExtraTools: []tool.Tool{stopDB}, NoBuiltins: true,
		ServerOptions: []fakellm.Option{fakellm.WithStrict(true)},
		Configure:     func(c *agent.Config) { c.Store = st }})
	sessID := env.Session.ID

	env.Srv.Script(fakellm.Text("First answer."))
	if res := env.Run("before"); res.Exit != turn.ExitCompleted {
		t.Fatalf("first turn: %s %+v", res.Exit, res.Failure)
	}

	env.Srv.Script(fakellm.Calls(fakellm.ToolCall("stop_db", `{}`)))
	res := env.Run("stop the database")
	wantUnavailable(t, "turn during which the database stopped", res)

	// With the server down the session cannot even be loaded: RunTurn
	// fails before admitting the turn, with the cause in the error.
	res, err := env.Agent.RunTurn(t.Context(), sessID, agent.Input{Text: "while it is down"})
	switch {
	case err != nil:
		if store.KindOf(err) != store.KindUnavailable || !strings.Contains(err.Error(), "cannot be reached") {
			t.Fatalf("turn while the database is down: %v, want an unreachable-database error", err)
		}
	default:
		wantUnavailable(t, "turn while the database is down", res)
	}

	if err := srv.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	var rows []store.Message
	env.Srv.Script(fakellm.Text("Back again."))
	res = env.Run("after the restart")
	if res.Exit != turn.ExitCompleted || !strings.Contains(res.FinalText, "Back again.") {
		t.Fatalf("turn after the restart: %s %q %+v", res.Exit, res.FinalText, res.Failure)
	}
	rows, err = st.Messages(t.Context(), sessID, store.MessageQuery{IncludeArchived: true})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, r := range rows {
		texts = append(texts, r.Text())
	}
	all := strings.Join(texts, "|")
	for _, want := range []string{"before", "First answer.", "stop the database", "after the restart", "Back again."} {
		if !strings.Contains(all, want) {
			t.Errorf("transcript lacks %q: %q", want, all)
		}
	}
}

func wantUnavailable(t *testing.T, what string, res turn.Result) {
	t.Helper()
	if res.Exit != turn.ExitPersistenceFailed || res.Failure == nil {
		t.Fatalf("%s: exit %s, failure %+v; want %s", what, res.Exit, res.Failure, turn.ExitPersistenceFailed)
	}
	if res.Failure.Reason() != "persistence:"+string(store.KindUnavailable) ||
		!strings.Contains(res.Failure.Message, "cannot be reached") {
		t.Fatalf("%s: failure %+v does not name an unreachable database", what, res.Failure)
	}
}

// Connections killed under a live store (pg_terminate_backend, as a
// failover or an administrator does): a write on a dead connection fails
// as KindUnavailable, never half-done, and the pool reconnects for the
// next one.
func TestKilledConnectionsRecover(t *testing.T) {
	dsn := pgtest.New(t)
	// The kills pick this store's connections by their application name:
	// other packages' tests share the server (and its database) and must
	// keep theirs.
	app := fmt.Sprintf("talaria_killtest_%d", time.Now().UnixNano())
	st := openAt(t, dsn+"&application_name="+app)
	sess := &store.Session{}
	if err := st.CreateSession(t.Context(), sess); err != nil {
		t.Fatal(err)
	}
	l, err := st.AcquireLease(t.Context(), sess.ID, "node", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	kill, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer kill.Close(t.Context())
	written := 0
	failures := 0
	for round := range 5 {
		// Warm the pool, then cut every connection but the killer's.
		for range 3 {
			if err := st.Append(t.Context(), l.Fence(), &store.Message{Message: llm.NewText(llm.RoleUser, "w")}); err == nil {
				written++
			} else if store.KindOf(err) != store.KindUnavailable {
				t.Fatalf("round %d: %v (kind %s)", round, err, store.KindOf(err))
			} else {
				failures++
			}
		}
		if _, err := kill.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE application_name = $1`, app); err != nil {
			t.Fatal(err)
		}
	}
	// A read after the kill is retried on a fresh connection: no failure.
	if _, err := st.GetSession(t.Context(), sess.ID); err != nil {
		t.Fatalf("GetSession after killed connections: %v", err)
	}
	if _, err := kill.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = $1`, app); err != nil {
		t.Fatal(err)
	}
	ok := false
	for range 5 {
		if err := st.Append(t.Context(), l.Fence(), &store.Message{Message: llm.NewText(llm.RoleUser, "w")}); err == nil {
			written++
			ok = true
			break
		} else if store.KindOf(err) != store.KindUnavailable {
			t.Fatalf("after the kills: %v", err)
		}
		failures++
	}
	if !ok {
		t.Fatal("the store never recovered from killed connections")
	}
	rows, err := st.Messages(t.Context(), sess.ID, store.MessageQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != written {
		t.Fatalf("%d rows stored, %d writes reported success (%d failed)", len(rows), written, failures)
	}
	t.Logf("%d writes, %d refused as unavailable", written, failures)
}
