package turn_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/llmtest"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// chain makes env's session the root of a compression chain of hops
// continuations (each parent ended with EndCompression) and returns the ids,
// root first.
func chain(t *testing.T, env *testenv.Env, hops int) []string {
	t.Helper()
	ctx := context.Background()
	ids := []string{env.Session.ID}
	for i := 0; i < hops; i++ {
		child := &store.Session{ID: fmt.Sprintf("%s-c%d", env.Session.ID, i+1), ParentID: ids[i],
			SystemPrompt: env.Session.SystemPrompt, StartedAt: time.Now().Add(time.Duration(i+1) * time.Millisecond)}
		if err := env.Store.CreateSession(ctx, child); err != nil {
			t.Fatal(err)
		}
		if err := env.Store.EndSession(ctx, ids[i], store.EndCompression); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, child.ID)
	}
	return ids
}

// A turn aimed at the root of a three-hop chain runs in its live tip, and
// so does /compact; a chain whose tip has ended fails closed: no turn, no
// row written anywhere.
func TestLineageResolvesToTip(t *testing.T) {
	t.Run("three hops to a live tip", func(t *testing.T) {
		env := testenv.New(t, testenv.Options{NoBuiltins: true,
			Configure: testenv.WithContext(testenv.ContextOptions{MinTail: 1})})
		ids := chain(t, env, 3)
		env.Srv.Script(fakellm.Text("hello from the tip"))
		res := env.Run("hi") // aimed at the root
		if res.Exit != turn.ExitCompleted || res.SessionID != ids[3] {
			t.Fatalf("exit %s in session %s; want completed in the tip %s", res.Exit, res.SessionID, ids[3])
		}
		if got := testenv.Roles(env.RowsOf(ids[3], true)); len(got) != 2 {
			t.Errorf("tip rows %v, want the user's message and the answer", got)
		}
		for _, id := range ids[:3] {
			if n := len(env.RowsOf(id, true)); n != 0 {
				t.Errorf("ended session %s got %d rows", id, n)
			}
		}
		// A long middle answer, past the protected tail's token budget.
		env.Srv.Script(fakellm.Text(strings.Repeat("again ", 2700)), fakellm.Text("and again"))
		steps := []string{"more", "last"}
		for _, s := range steps {
			if r := env.Run(s); r.Exit != turn.ExitCompleted || r.SessionID != ids[3] {
				t.Fatalf("turn %q: %s in %s", s, r.Exit, r.SessionID)
			}
		}
		env.Srv.ScriptModel(testenv.SummaryModel, fakellm.Text("## Task\nsay hi"))
		out, err := env.Agent.Compact(context.Background(), ids[0])
		if err != nil || out.SessionID != ids[3] || out.Summarized == 0 {
			t.Fatalf("Compact(root) = %+v, %v; want the tip's middle summarized", out, err)
		}
	})
	t.Run("tip ended fails closed", func(t *testing.T) {
		env := testenv.New(t, testenv.Options{NoBuiltins: true})
		ids := chain(t, env, 3)
		if err := env.Store.EndSession(context.Background(), ids[3], store.EndUser); err != nil {
			t.Fatal(err)
		}
		res, err := env.Agent.RunTurn(context.Background(), ids[0], agentInput("hi"))
		if !errors.Is(err, store.ErrEnded) || res.Exit != turn.ExitSessionFailed || res.Failure == nil {
			t.Fatalf("RunTurn = %s, %v; want a failure wrapping ErrEnded", res.Exit, err)
		}
		for _, id := range ids {
			if n := len(env.RowsOf(id, true)); n != 0 {
				t.Errorf("session %s got %d rows", id, n)
			}
		}
		if len(env.Srv.Requests()) != 0 {
			t.Error("a request was sent for an ended session")
		}
		if _, err := env.Agent.Compact(context.Background(), ids[1]); err == nil {
			t.Error("Compact of a dead chain succeeded")
		}
	})
}

// With compression.rotate, every compression continues the session in a
// child: the parent ends with EndCompression and keeps its rows untouched,
// the child starts from the compressed transcript, the turn goes on
// writing in the child under the child's lease, and turns aimed at the
// original id follow the whole chain. No lease is left held.
func TestCompressionRotatesSession(t *testing.T) {
	const window = 4000
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{API: api, NoBuiltins: true,
				ExtraTools: []tool.Tool{testenv.FetchTool(fetchSize)},
				Configure: func(c *agent.Config) {
					testenv.WithContext(testenv.ContextOptions{Window: window, Rotate: true})(c)
					// The refresher runs all through the turn, so it races
					// the rotation's lease handover.
					c.LeaseRefresh, c.LeaseTTL = 2*time.Millisecond, 10*time.Second
				}})
			var summaries atomic.Int32
			env.Srv.SetDefault(stepModel(api, window, &summaries))
			ctx := context.Background()
			compactions, last := 0, env.Session.ID
			for n := 1; n <= 12; n++ {
				res := env.Run(fmt.Sprintf("step %d", n)) // always the root's id
				if res.Exit != turn.ExitCompleted {
					t.Fatalf("step %d: %s %+v", n, res.Exit, res.Failure)
				}
				compactions += res.Compactions
				if res.Compactions > 0 && res.SessionID == last {
					t.Fatalf("step %d compressed but stayed in %s", n, last)
				}
				last = res.SessionID
			}
			if compactions < 2 {
				t.Fatalf("%d compactions; the test needs at least 2", compactions)
			}
			tip, err := store.ResolveTip(ctx, env.Store, env.Session.ID)
			if err != nil || tip.ID != last {
				t.Fatalf("tip = %v, %v; want %s", tip, err, last)
			}
			// Walk back from the tip: compactions hops to the root.
			hops := 0
			for s := tip; s.ParentID != ""; hops++ {
				p, err := env.Store.GetSession(ctx, s.ParentID)
				if err != nil {
					t.Fatal(err)
				}
				if p.Live() || p.EndReason != store.EndCompression || p.SystemPrompt != tip.SystemPrompt {
					t.Errorf("parent %s: live=%v reason %q", p.ID, p.Live(), p.EndReason)
				}
				for _, r := range env.RowsOf(p.ID, true) {
					if r.Archived {
						t.Errorf("parent %s: row %d archived; a rotated parent keeps its rows as they were", p.ID, r.Seq)
					}
				}
				s = p
			}
			if hops != compactions {
				t.Errorf("%d hops from the tip to the root, want %d", hops, compactions)
			}
			rows := env.RowsOf(tip.ID, false)
			if rows[0].Text() != "step 1" || !containsKind(rows, store.RowSummary) {
				t.Errorf("the tip does not start from the compressed transcript: %v", testenv.Roles(rows))
			}
			// Every lease was released: another holder gets each at once.
			for s := tip; ; {
				if _, err := env.Store.AcquireLease(ctx, s.ID, "someone-else", time.Minute); err != nil {
					t.Errorf("lease of %s still held: %v", s.ID, err)
				}
				if s.ParentID == "" {
					break
				}
				s, _ = env.Store.GetSession(ctx, s.ParentID)
			}
			env.NoViolations()
		})
	}
}

func agentInput(text string) agent.Input { return agent.Input{Text: text} }

func containsKind(rows []store.Message, k store.RowKind) bool {
	for _, r := range rows {
		if r.Kind == k {
			return true
		}
	}
	return false
}

// A turn that waited for the session while another turn rotated it moves
// to the new tip once admitted, instead of failing on the ended parent. It
// runs in a synctest bubble (the scripted model in process, SQLite in a temp
// dir): synctest.Wait returns once the turn is blocked waiting for the
// lease, with no sleep guessing how long that takes.
func TestTurnWaitingDuringRotationAdoptsTip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		dir := t.TempDir()
		st, err := sqlite.Open(ctx, filepath.Join(dir, "state.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		ag, err := agent.New(agent.Config{Store: st, Workspace: dir,
			Config: turn.Config{Routes: []turn.Route{{Provider: llmtest.New(llmtest.Text("answered in the child")), Model: "scripted"}}}})
		if err != nil {
			t.Fatal(err)
		}
		sess, err := ag.NewSession(ctx, agent.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		other, err := st.AcquireLease(ctx, sess.ID, "other-process", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan turn.Result, 1)
		go func() {
			res, _ := ag.RunTurn(ctx, sess.ID, agentInput("hello"))
			done <- res
		}()
		synctest.Wait() // our turn waits for the lease now
		select {
		case res := <-done:
			t.Fatalf("the turn did not wait for the held lease: exit %s", res.Exit)
		default:
		}
		// The other holder rotates the session while our turn waits for it.
		child := &store.Session{ID: sess.ID + "-child", ParentID: sess.ID, SystemPrompt: sess.SystemPrompt}
		if err := st.CreateSession(ctx, child); err != nil {
			t.Fatal(err)
		}
		if err := st.EndSession(ctx, sess.ID, store.EndCompression); err != nil {
			t.Fatal(err)
		}
		if err := st.ReleaseLease(ctx, other); err != nil {
			t.Fatal(err)
		}
		res := <-done
		if res.Exit != turn.ExitCompleted || res.SessionID != child.ID {
			t.Fatalf("exit %s in %s, failure %+v; want completed in %s", res.Exit, res.SessionID, res.Failure, child.ID)
		}
		if rows, _ := st.Messages(ctx, sess.ID, store.MessageQuery{IncludeArchived: true}); len(rows) != 0 {
			t.Errorf("the ended parent got rows: %v", testenv.Roles(rows))
		}
		if rows, _ := st.Messages(ctx, child.ID, store.MessageQuery{}); len(rows) != 2 || rows[0].Role != llm.RoleUser {
			t.Errorf("child rows %v", testenv.Roles(rows))
		}
	})
}
