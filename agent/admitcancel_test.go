package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// cancelOnCommit is a store whose lease write commits and then hears its
// context's cancel, as a driver does when a cancel lands at the commit:
// the write is done, the caller is told ctx's error.
type cancelOnCommit struct {
	store.Store
	cancel context.CancelFunc
}

func (s *cancelOnCommit) AcquireLeaseAppend(ctx context.Context, sessionID, holder string, ttl time.Duration, msgs ...*store.Message) (store.Lease, error) {
	l, err := s.Store.AcquireLeaseAppend(ctx, sessionID, holder, ttl, msgs...)
	s.cancel()
	if err == nil && ctx.Err() != nil {
		return store.Lease{}, ctx.Err()
	}
	return l, err
}

// An interrupt that arrives as the turn's lease and message commit: the
// message is stored once (not again as unsent), the turn ends interrupted
// and its lease is released, not left to expire.
func TestInterruptAtAdmissionCommitStoresMessageOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	env := testenv.New(t, testenv.Options{Configure: func(c *agent.Config) {
		c.Store = &cancelOnCommit{Store: c.Store.(store.Store), cancel: cancel}
	}})
	env.Srv.Script(fakellm.Text("never asked"))
	res, err := env.Agent.RunTurn(ctx, env.Session.ID, agent.Input{Text: "typed once"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit != turn.ExitInterrupted {
		t.Fatalf("exit %s (%s), want interrupted", res.Exit, res.Explanation)
	}
	n := 0
	for _, r := range env.RowsOf(env.Session.ID, true) {
		if r.Text() == "typed once" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the message is stored %d times, want once: %v", n, testenv.Roles(env.RowsOf(env.Session.ID, true)))
	}
	leaseFree(t, env)
}
