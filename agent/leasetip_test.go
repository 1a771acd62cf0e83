package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// triesStore reports each lease the agent tried to take and found held, so
// a test can act while the agent is waiting instead of sleeping.
type triesStore struct {
	store.Store
	held chan string // session ids, in order
}

func (s *triesStore) AcquireLease(ctx context.Context, id, holder string, ttl time.Duration) (store.Lease, error) {
	l, err := s.Store.AcquireLease(ctx, id, holder, ttl)
	s.report(id, err)
	return l, err
}

// AcquireLeaseAppend is how turns and compactions take the lease.
func (s *triesStore) AcquireLeaseAppend(ctx context.Context, id, holder string, ttl time.Duration, msgs ...*store.Message) (store.Lease, error) {
	l, err := s.Store.AcquireLeaseAppend(ctx, id, holder, ttl, msgs...)
	s.report(id, err)
	return l, err
}

// report tells a listener that the lease of id was found held.
func (s *triesStore) report(id string, err error) {
	var h *store.LeaseHeldError
	if errors.As(err, &h) {
		select {
		case s.held <- id:
		default: // nobody listening for more
		}
	}
}

// waitTried waits until the agent found the lease of id held.
func (s *triesStore) waitTried(t *testing.T, id string) {
	t.Helper()
	if !s.tried(id, 10*time.Second) {
		t.Fatalf("the agent never waited for the lease of %s", id)
	}
}

// tried reports whether the agent found the lease of id held within d.
func (s *triesStore) tried(id string, d time.Duration) bool {
	timeout := time.After(d)
	for {
		select {
		case got := <-s.held:
			if got == id {
				return true
			}
		case <-timeout:
			return false
		}
	}
}

// leaseOp is what waits for a session's lease: a turn or a compaction.
// It returns the session it ran in, and for a failure the turn's exit or
// the compaction's error.
type leaseOp struct {
	name string
	run  func(ctx context.Context, env *testenv.Env, id string) (sessionID string, exit turn.Exit, err error)
}

var leaseOps = []leaseOp{
	{"turn", func(ctx context.Context, env *testenv.Env, id string) (string, turn.Exit, error) {
		env.Srv.Script(fakellm.Text("answered"))
		res, err := env.Agent.RunTurn(ctx, id, agent.Input{Text: "hello"})
		return res.SessionID, res.Exit, err
	}},
	{"compact", func(ctx context.Context, env *testenv.Env, id string) (string, turn.Exit, error) {
		env.Srv.ScriptModel(testenv.SummaryModel, fakellm.Text("## Task\nthe user said hi"))
		out, err := env.Agent.Compact(ctx, id)
		if err != nil {
			return out.SessionID, turn.ExitFailed, err
		}
		if out.Summarized == 0 {
			return out.SessionID, turn.ExitFailed, errors.New("nothing was summarized")
		}
		return out.SessionID, turn.ExitCompleted, nil
	}},
}

// newLeaseEnv is an env whose agent reports its lease tries, with a short
// protected tail so a compaction has a middle to summarize.
func newLeaseEnv(t *testing.T, configure func(*agent.Config)) (*testenv.Env, *triesStore) {
	t.Helper()
	var ts *triesStore
	env := testenv.New(t, testenv.Options{NoBuiltins: true, Configure: func(c *agent.Config) {
		testenv.WithContext(testenv.ContextOptions{MinTail: 1})(c)
		ts = &triesStore{Store: c.Store.(store.Store), held: make(chan string, 64)}
		c.Store = ts
		if configure != nil {
			configure(c)
		}
	}})
	return env, ts
}

// transcript writes a finished exchange with a long middle answer to a
// session under fence.
func transcript(t *testing.T, st store.Store, f store.Fence) {
	t.Helper()
	rows := []*store.Message{
		{Message: llm.NewText(llm.RoleUser, "hi")},
		{Message: llm.NewText(llm.RoleAssistant, "hello")},
		{Message: llm.NewText(llm.RoleUser, "write a lot")},
		{Message: llm.NewText(llm.RoleAssistant, "MIDDLE "+strings.Repeat("again ", 2700))},
		{Message: llm.NewText(llm.RoleUser, "thanks")},
		{Message: llm.NewText(llm.RoleAssistant, "you're welcome")},
	}
	if err := st.Append(t.Context(), f, rows...); err != nil {
		t.Fatal(err)
	}
}

// A turn and a compaction waiting for a session that another process's
// turn rotates meanwhile follow the lineage the same way: they wait for the
// parent, find it ended under its lease, wait again for the child the other
// turn still holds, and run there. The ended parent gets nothing.
func TestLeaseWaitFollowsRotation(t *testing.T) {
	for _, op := range leaseOps {
		t.Run(op.name, func(t *testing.T) {
			env, ts := newLeaseEnv(t, func(c *agent.Config) { c.AdmitWait = time.Minute })
			ctx := context.Background()
			st, root := env.Store, env.Session
			other, err := st.AcquireLease(ctx, root.ID, "other-host:1:aaaaaa", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			type outcome struct {
				id   string
				exit turn.Exit
				err  error
			}
			done := make(chan outcome, 1)
			go func() {
				id, exit, err := op.run(ctx, env, root.ID)
				done <- outcome{id, exit, err}
			}()
			ts.waitTried(t, root.ID)

			// The other process rotates: child written and leased, parent
			// ended, parent's lease released; it still holds the child's.
			child := &store.Session{ID: root.ID + "-child", ParentID: root.ID, SystemPrompt: root.SystemPrompt,
				Provider: root.Provider, Model: root.Model}
			if err := st.CreateSession(ctx, child); err != nil {
				t.Fatal(err)
			}
			cl, err := st.AcquireLease(ctx, child.ID, "other-host:1:aaaaaa", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			transcript(t, st, cl.Fence())
			if err := st.EndSession(ctx, root.ID, store.EndCompression); err != nil {
				t.Fatal(err)
			}
			if err := st.ReleaseLease(ctx, other); err != nil {
				t.Fatal(err)
			}
			ts.waitTried(t, child.ID)
			if err := st.ReleaseLease(ctx, cl); err != nil {
				t.Fatal(err)
			}

			var got outcome
			select {
			case got = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the waiting operation did not finish after the child's lease was released")
			}
			if got.err != nil || got.exit != turn.ExitCompleted || got.id != child.ID {
				t.Fatalf("ran in %s: exit %s, err %v; want completed in the tip %s", got.id, got.exit, got.err, child.ID)
			}
			if rows := env.RowsOf(root.ID, true); len(rows) != 0 {
				t.Errorf("the ended parent got rows: %v", testenv.Roles(rows))
			}
			for _, id := range []string{root.ID, child.ID} {
				l, err := st.AcquireLease(ctx, id, "checker:1:x", time.Minute)
				if err != nil {
					t.Errorf("the lease of %s was left held: %v", id, err)
					continue
				}
				_ = st.ReleaseLease(ctx, l)
			}
		})
	}
}

// The one wait for a lease honours AdmitWait on the agent's clock and the
// caller's context, for turns and compactions alike: a timeout is busy
// (the holder named), a cancel ends the wait at once. The holder lets go
// 3 s in; a wait that ran longer than its policy succeeds and fails the
// test.
func TestLeaseWaitTimeoutAndCancel(t *testing.T) {
	cases := []struct {
		name      string
		configure func(*agent.Config)
		cancel    bool
	}{
		{"admit wait", func(c *agent.Config) { c.AdmitWait = 100 * time.Millisecond }, false},
		{"admit wait on the agent's clock", func(c *agent.Config) {
			// An hour of AdmitWait passes in a few readings of this clock.
			var ticks atomic.Int64
			base := time.Now()
			c.AdmitWait = time.Hour
			c.Now = func() time.Time { return base.Add(time.Duration(ticks.Add(1)) * 20 * time.Minute) }
		}, false},
		{"context cancelled", func(c *agent.Config) { c.AdmitWait = time.Minute }, true},
	}
	for _, op := range leaseOps {
		for _, c := range cases {
			t.Run(op.name+"/"+c.name, func(t *testing.T) {
				env, ts := newLeaseEnv(t, c.configure)
				st := env.Store
				l, err := st.AcquireLease(t.Context(), env.Session.ID, "other-host:1:bbbbbb", time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				transcript(t, st, l.Fence())
				letGo := time.AfterFunc(3*time.Second, func() { _ = st.ReleaseLease(context.Background(), l) })
				t.Cleanup(func() { letGo.Stop() })
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if c.cancel {
					go func() {
						if ts.tried(env.Session.ID, 10*time.Second) {
							cancel()
						}
					}()
				}
				id, exit, err := op.run(ctx, env, env.Session.ID)
				if !letGo.Stop() {
					t.Fatalf("the wait outlived its policy: the holder let go first (exit %s, err %v)", exit, err)
				}
				_ = st.ReleaseLease(context.Background(), l)
				if op.name == "turn" && id != env.Session.ID {
					t.Errorf("reported session %s, want %s", id, env.Session.ID)
				}
				var held *store.LeaseHeldError
				switch {
				case c.cancel && op.name == "turn":
					if exit != turn.ExitInterrupted {
						t.Errorf("exit %s, want interrupted", exit)
					}
				case c.cancel:
					if !errors.Is(err, context.Canceled) {
						t.Errorf("err %v, want context.Canceled", err)
					}
				case op.name == "turn":
					if exit != turn.ExitBusy {
						t.Errorf("exit %s, want busy", exit)
					}
				case !errors.As(err, &held) || held.Holder != "other-host:1:bbbbbb":
					t.Errorf("err %v, want the lease held by other-host:1:bbbbbb", err)
				}
			})
		}
	}
}

// Compact with compression.rotate continues the session in a child and
// lets go of the child's lease when done; a second Compact aimed at the
// root id writes to the newest tip.
func TestCompactAfterRotationWritesToTip(t *testing.T) {
	env, _ := newLeaseEnv(t, func(c *agent.Config) { c.RotateOnCompression = true })
	ctx := context.Background()
	st, root := env.Store, env.Session
	l, err := st.AcquireLease(ctx, root.ID, "setup:1:x", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	transcript(t, st, l.Fence())
	if err := st.ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	ids := []string{root.ID}
	for i := 0; i < 2; i++ {
		if i > 0 {
			// A new exchange with a long middle in the tip, so the second
			// pass has something to summarize.
			tl, err := st.AcquireLease(ctx, ids[i], "setup:1:x", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			transcript(t, st, tl.Fence())
			_ = st.ReleaseLease(ctx, tl)
		}
		env.Srv.ScriptModel(testenv.SummaryModel, fakellm.Text("## Task\nthe user said hi"))
		out, err := env.Agent.Compact(ctx, root.ID)
		if err != nil || !out.Rotated || out.Summarized == 0 {
			t.Fatalf("pass %d: %+v, %v; want a rotation with a summary", i+1, out, err)
		}
		tip, err := st.GetSession(ctx, out.SessionID)
		if err != nil || tip.ParentID != ids[i] || !tip.Live() {
			t.Fatalf("pass %d wrote to %+v (%v); want a live child of %s", i+1, tip, err, ids[i])
		}
		ids = append(ids, tip.ID)
		rows := env.RowsOf(tip.ID, false)
		if len(rows) == 0 || rows[len(rows)-1].Text() != "you're welcome" {
			t.Errorf("pass %d: the tip does not hold the compressed transcript: %v", i+1, testenv.Roles(rows))
		}
		for _, id := range ids {
			cl, err := st.AcquireLease(ctx, id, "checker:1:x", time.Minute)
			if err != nil {
				t.Errorf("pass %d: the lease of %s was left held: %v", i+1, id, err)
				continue
			}
			_ = st.ReleaseLease(ctx, cl)
		}
	}
	if sp, err := st.GetSession(ctx, ids[2]); err != nil || sp.APICalls != 1 {
		t.Errorf("the tip's totals %+v (%v); want the summary call counted once", sp, err)
	}
}

// movingStore continues every session in a new child right before the
// agent takes its lease, as if a rotation always won the race.
type movingStore struct {
	store.Store
	leased atomic.Int32
}

func (s *movingStore) AcquireLeaseAppend(ctx context.Context, id, holder string, ttl time.Duration, msgs ...*store.Message) (store.Lease, error) {
	n := s.leased.Add(1)
	child := &store.Session{ID: fmt.Sprintf("%s-%d", id, n), ParentID: id}
	if err := s.Store.CreateSession(ctx, child); err != nil {
		return store.Lease{}, err
	}
	if err := s.Store.EndSession(ctx, id, store.EndCompression); err != nil {
		return store.Lease{}, err
	}
	return s.Store.AcquireLeaseAppend(ctx, id, holder, ttl, msgs...)
}

// The wait follows a moving tip a bounded number of times, then gives up
// saying so, for turns and compactions alike.
func TestLeaseWaitGivesUpOnMovingTip(t *testing.T) {
	for _, op := range leaseOps {
		t.Run(op.name, func(t *testing.T) {
			var ms *movingStore
			env, _ := newLeaseEnv(t, func(c *agent.Config) {
				ms = &movingStore{Store: c.Store.(store.Store)}
				c.Store = ms
			})
			_, exit, err := op.run(t.Context(), env, env.Session.ID)
			// A turn whose session cannot be followed to its tip ends
			// session_failed; a compaction reports failed.
			want := turn.ExitFailed
			if op.name == "turn" {
				want = turn.ExitSessionFailed
			}
			if err == nil || exit != want {
				t.Fatalf("exit %s, err %v; want %s", exit, err, want)
			}
			if op.name == "compact" && !strings.Contains(err.Error(), "keeps moving to new continuations") {
				t.Errorf("err %v; want it to say the session keeps moving", err)
			}
			if op.name == "turn" && (!errors.Is(err, store.ErrEnded) || !strings.Contains(err.Error(), "still moving after")) {
				t.Errorf("err %v; want it to say the session is still moving", err)
			}
			if n := ms.leased.Load(); n != 4 {
				t.Errorf("took %d leases, want 4: the first session and 3 continuations", n)
			}
		})
	}
}
