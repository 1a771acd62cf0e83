package memstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/memstore"
	"github.com/talaria-agent/talaria/store/storetest"
)

func newStore(t *testing.T) *memstore.Store {
	s := memstore.New()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestCore is the suite of what an agent needs, on its own (a backend of
// just the session service would run only this one).
func TestCore(t *testing.T) {
	storetest.RunCore(t, func(t *testing.T) store.SessionService { return newStore(t) })
}

// TestContract is everything the SQL backends pass: store.Store and both
// ledgers.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t) })
}

// A call whose context has ended does nothing and says why.
func TestCanceledContext(t *testing.T) {
	s := newStore(t)
	sess := &store.Session{Title: "t"}
	if err := s.CreateSession(t.Context(), sess); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for name, err := range map[string]error{
		"Append":      s.Append(ctx, store.Fence{SessionID: sess.ID}, &store.Message{Message: llm.NewText(llm.RoleUser, "x")}),
		"SetTitle":    s.SetTitle(ctx, sess.ID, "changed"),
		"AddMemory":   s.AddMemory(ctx, &store.MemoryEntry{Workspace: "/w", Text: "x"}),
		"CreateToken": s.CreateToken(ctx, &store.Token{Name: "n", Principal: "p", Hash: "h"}),
	} {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with an ended context: %v, want context.Canceled", name, err)
		}
	}
	if _, err := s.AcquireLease(ctx, sess.ID, "h", time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("AcquireLease with an ended context: %v", err)
	}
	got, err := s.GetSession(t.Context(), sess.ID)
	if err != nil || got.Title != "t" || got.MessageCount != 0 {
		t.Fatalf("after canceled calls: %+v, %v; want the session unchanged", got, err)
	}
	if l, err := s.AcquireLease(t.Context(), sess.ID, "h", time.Minute); err != nil || l.Token != 1 {
		t.Fatalf("first real acquire: %+v, %v; want token 1 (the canceled one took none)", l, err)
	}
}
