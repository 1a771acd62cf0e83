package agent

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/openai"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
	"github.com/talaria-agent/talaria/turn"
)

// newTestAgent builds an agent on a temp SQLite store; its provider is
// never called.
func newTestAgent(t *testing.T, st store.Store) *Agent {
	t.Helper()
	a, err := New(Config{
		Store:     st,
		Workspace: t.TempDir(),
		Holder:    "me",
		LeaseTTL:  time.Minute,
		Config: turn.Config{Routes: []turn.Route{{
			Provider: openai.NewChat(openai.Config{BaseURL: "http://127.0.0.1:1/v1", APIKey: "unused"}),
			Model:    "test-model",
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), t.TempDir()+"/state.db", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func compressedRows() []*store.Message {
	return []*store.Message{
		{Message: llm.NewText(llm.RoleUser, "task")},
		{Message: llm.NewText(llm.RoleAssistant, "done")},
	}
}

// rotate moves the transcript and the lease to a child and ends the parent;
// when the parent's lease was lost meanwhile it changes nothing at all:
// the parent stays live and the half-made child is removed. The lease
// expires in a synctest bubble: fake-clock time, exact and instant.
func TestRotate(t *testing.T) {
	cases := []struct {
		name      string
		loseLease bool
	}{
		{"parent lease held", false},
		{"parent lease taken over", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				st := openStore(t)
				a := newTestAgent(t, st)
				parent, err := a.NewSession(ctx, SessionOptions{Title: "p"})
				if err != nil {
					t.Fatal(err)
				}
				const ttl = time.Minute
				lease, err := st.AcquireLease(ctx, parent.ID, "me", ttl)
				if err != nil {
					t.Fatal(err)
				}
				var thief store.Lease
				if tc.loseLease {
					time.Sleep(ttl + time.Millisecond) // let it expire
					if thief, err = st.AcquireLease(ctx, parent.ID, "thief", time.Minute); err != nil {
						t.Fatal(err)
					}
				}
				tl := &turnLease{l: lease}
				child, err := a.rotate(ctx, parent, tl, compressedRows())
				p, gerr := st.GetSession(ctx, parent.ID)
				if gerr != nil {
					t.Fatal(gerr)
				}
				kids, _ := st.ChildSessions(ctx, parent.ID)
				if tc.loseLease {
					if !errors.Is(err, store.ErrLeaseLost) || !p.Live() || len(kids) != 0 || tl.get() != lease {
						t.Fatalf("err %v, parent live %v, %d children, lease moved %v; want nothing changed",
							err, p.Live(), len(kids), tl.get() != lease)
					}
					if _, err := st.RefreshLease(ctx, thief, time.Minute); err != nil {
						t.Errorf("the other holder's lease was disturbed: %v", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if p.Live() || p.EndReason != store.EndCompression || len(kids) != 1 || kids[0].ID != child.ID {
					t.Fatalf("parent live=%v reason %q, children %v", p.Live(), p.EndReason, kids)
				}
				if child.ParentID != parent.ID || child.SystemPrompt != parent.SystemPrompt || child.Title != "p" {
					t.Errorf("child %+v does not continue the parent", child)
				}
				if got := tl.get(); got.SessionID != child.ID {
					t.Errorf("the turn's lease is on %s, want the child", got.SessionID)
				}
				rows, _ := st.Messages(ctx, child.ID, store.MessageQuery{})
				if len(rows) != 2 || rows[0].Text() != "task" {
					t.Errorf("child rows %+v", rows)
				}
				// The parent's lease was released: anyone may take it now.
				if _, err := st.AcquireLease(ctx, parent.ID, "other", time.Minute); err != nil {
					t.Errorf("parent lease still held: %v", err)
				}
			})
		})
	}
}

// rotatingStore performs a rotation's lease handover in the middle of the
// refresher's RefreshLease of the old lease, the race the refresher must
// survive.
type rotatingStore struct {
	store.Store
	tl    *turnLease
	child store.Lease
	done  chan struct{}
}

func (s *rotatingStore) RefreshLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	select {
	case <-s.done:
	default:
		// The handover is complete before done says so: a waiter must
		// never see the old lease after done.
		s.tl.set(s.child)
		_ = s.Store.ReleaseLease(ctx, l)
		close(s.done)
	}
	return s.Store.RefreshLease(ctx, l, ttl)
}

// The refresher treats the failed renewal of a lease a rotation released
// on purpose as nothing, renews the child's lease from then on, and does
// not stop the turn. It runs in a synctest bubble: the refresh periods are
// fake-clock time.
func TestRefresherSurvivesRotation(t *testing.T) { synctest.Test(t, testRefresherSurvivesRotation) }

func testRefresherSurvivesRotation(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	a := newTestAgent(t, st)
	parent, _ := a.NewSession(ctx, SessionOptions{})
	child, _ := a.NewSession(ctx, SessionOptions{})
	pl, err := st.AcquireLease(ctx, parent.ID, "me", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := st.AcquireLease(ctx, child.ID, "me", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tl := &turnLease{l: pl}
	rs := &rotatingStore{Store: st, tl: tl, child: cl, done: make(chan struct{})}
	a.cfg.Store = rs
	a.cfg.LeaseRefresh = time.Millisecond

	turnCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopped := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		a.refresh(turnCtx, cancel, tl, stopped)
	}()
	<-rs.done
	// Wait until it has renewed the child's lease: a few refresh periods,
	// bounded in fake time so that a refresher that never does fails below.
	renewed := func() bool { got := tl.get(); return got.SessionID == child.ID && got.ExpiresAt.After(cl.ExpiresAt) }
	for i := 0; !renewed() && i < 1000; i++ {
		time.Sleep(time.Millisecond)
	}
	close(stopped)
	<-finished
	if cause := context.Cause(turnCtx); cause != nil {
		t.Fatalf("the refresher stopped the turn: %v", cause)
	}
	if got := tl.get(); got.SessionID != child.ID || !got.ExpiresAt.After(cl.ExpiresAt) {
		t.Errorf("lease %+v: the child's lease was not renewed", got)
	}
}
