package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// admit takes the session's turn lease, waiting up to AdmitWait for another
// holder. When it cannot (timeout, interrupt, store failure) it returns an
// early result instead — after saving the user's message as an unsent,
// display-only row, so nothing typed is lost and the running turn's rows are
// not disturbed.
func (a *Agent) admit(ctx context.Context, sess *store.Session, msg llm.Message, turnID string) (store.Lease, *turn.Result) {
	deadline := a.now().Add(a.cfg.AdmitWait)
	wait := 50 * time.Millisecond
	var held *store.LeaseHeldError
	for {
		lease, err := a.acquire(ctx, sess.ID)
		if err == nil {
			return lease, nil
		}
		if !errors.As(err, &held) {
			if ctx.Err() != nil {
				return store.Lease{}, a.early(ctx, sess, msg, turnID, turn.ExitInterrupted, nil)
			}
			return store.Lease{}, a.early(ctx, sess, msg, turnID, turn.ExitPersistenceFailed, turn.StoreFailure("Could not start the turn", err))
		}
		left := deadline.Sub(a.now())
		if left <= 0 {
			return store.Lease{}, a.early(ctx, sess, msg, turnID, turn.ExitBusy, &turn.Failure{
				Class:     failover.ClassBusy,
				Retryable: true,
				Message: fmt.Sprintf("Session %s is busy: another turn (held by %s) is still running. Your message was saved but not sent; send it again when that turn ends.",
					sess.ID, held.Holder),
			})
		}
		t := time.NewTimer(min(wait, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return store.Lease{}, a.early(ctx, sess, msg, turnID, turn.ExitInterrupted, nil)
		case <-t.C:
		}
		wait = min(wait*2, time.Second)
	}
}

// acquire tries once to take the session's lease. A lease whose holder is a
// killed process on this host (see holderGone) is released and taken at
// once: after a kill -9 the session is usable again right away instead of
// when the dead turn's lease expires. Releasing by the dead holder's token
// frees nothing if anyone else got the lease meanwhile.
func (a *Agent) acquire(ctx context.Context, sessionID string) (store.Lease, error) {
	lease, err := a.cfg.Store.AcquireLease(ctx, sessionID, a.cfg.Holder, a.cfg.LeaseTTL)
	var held *store.LeaseHeldError
	if err == nil || !errors.As(err, &held) || held.Token == 0 || !holderGone(held.Holder) {
		return lease, err
	}
	a.log.Info("the session's turn lease belongs to a process that no longer runs; taking it over",
		"session", sessionID, "holder", held.Holder, "token", held.Token)
	dead := store.Lease{SessionID: sessionID, Holder: held.Holder, Token: held.Token}
	if rerr := a.cfg.Store.ReleaseLease(ctx, dead); rerr != nil {
		return lease, err
	}
	return a.cfg.Store.AcquireLease(ctx, sessionID, a.cfg.Holder, a.cfg.LeaseTTL)
}

// early builds the result of a turn that was never admitted and keeps the
// user's message as an unsent row.
func (a *Agent) early(ctx context.Context, sess *store.Session, msg llm.Message, turnID string, exit turn.Exit, f *turn.Failure) *turn.Result {
	res := &turn.Result{SessionID: sess.ID, TurnID: turnID, Exit: exit, Failure: f,
		Provider: sess.Provider, Model: sess.Model}
	if exit == turn.ExitInterrupted {
		res.Explanation = "The turn was interrupted while waiting for the session to become free; your message was saved but not sent."
	} else if f != nil {
		res.Explanation = f.Message
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	row := &store.Message{Message: msg, TurnID: turnID, Kind: store.KindUnsent, CreatedAt: a.now()}
	if err := a.appendUnsent(dctx, sess.ID, row); err != nil {
		a.log.Warn("could not save the unsent message", "session", sess.ID, "error", err)
	}
	return res
}

// refresh renews the lease every LeaseRefresh until stopped. It is also the
// watchdog: when the lease is taken over, or cannot be renewed before it
// expires, it cancels the turn with turn.ErrLeaseLost — a hard interrupt
// after which the fence refuses the old turn's writes anyway.
func (a *Agent) refresh(ctx context.Context, cancel context.CancelCauseFunc, tl *turnLease, stopped <-chan struct{}) {
	tick := time.NewTicker(a.cfg.LeaseRefresh)
	defer tick.Stop()
	for {
		select {
		case <-stopped:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		lease := tl.get()
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.LeaseRefresh)
		next, err := a.cfg.Store.RefreshLease(rctx, lease, a.cfg.LeaseTTL)
		rcancel()
		switch {
		case err == nil:
			tl.renewed(lease, next)
		case tl.moved(lease):
			// A rotation released this lease on purpose; the next tick
			// renews the child's.
		case errors.Is(err, store.ErrLeaseLost):
			a.log.Warn("turn lease taken over; stopping the turn", "session", lease.SessionID)
			cancel(fmt.Errorf("%w: %v", turn.ErrLeaseLost, err))
			return
		case a.now().After(lease.ExpiresAt.Add(-a.cfg.LeaseRefresh / 2)):
			a.log.Warn("turn lease could not be renewed before it expires; stopping the turn", "session", lease.SessionID, "error", err)
			cancel(fmt.Errorf("%w: refresh failed: %v", turn.ErrLeaseLost, err))
			return
		default:
			a.log.Warn("turn lease refresh failed; will retry", "session", lease.SessionID, "error", err)
		}
	}
}
