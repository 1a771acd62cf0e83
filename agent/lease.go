package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// The session's turn lease serializes everything that writes a session's
// transcript: turns (RunTurn, subagents, background reviews) and compaction
// (Compact). All of them take it through leaseTip, the one loop that waits
// for another holder and follows the session's lineage to its live tip.

const (
	// maxAdoptions bounds how often one wait moves to a newer tip because
	// the session it waited for had ended meanwhile.
	maxAdoptions = 3
	// leaseRetryFirst and leaseRetryMax bound the pause between two tries
	// while another holder has the lease: it doubles from first to max.
	leaseRetryFirst = 50 * time.Millisecond
	leaseRetryMax   = time.Second
	// leaseReleaseTimeout bounds releasing a lease on the way out.
	leaseReleaseTimeout = 10 * time.Second
)

// tipError is leaseTip's failure to find a live session to lease: the
// session is unknown, ended for good, could not be read, or kept moving to
// new continuations (moving).
type tipError struct {
	id     string // the session the failure is about
	moving bool
	err    error
}

func (e *tipError) Error() string { return e.err.Error() }
func (e *tipError) Unwrap() error { return e.err }

// leaseTip takes the turn lease of sess's live tip. It tries to take the
// lease and, while another holder has it, tries again — backing off from
// leaseRetryFirst to leaseRetryMax — until AdmitWait has passed on the
// agent's clock or ctx ends. The lease is taken only while the session is
// live, checked in the same transaction (store.AcquireLeaseAppend): one
// rotated while this waited moves the wait to its newest tip (at most
// maxAdoptions times), each session waited for up to AdmitWait. Rotation
// ends a session only under its lease, so a session leased live stays live
// while the lease is held.
//
// rows, when given, are the turn's first rows (the user's message): they
// are written in the transaction that takes the lease, so a turn's
// admission and its first write are one commit, and a crash leaves both or
// neither. On success they carry their ID and Seq.
//
// It returns the session it holds the lease of; on failure the last session
// it tried and an error: the *store.LeaseHeldError of a wait that timed
// out, ctx's error when ctx ended, a *tipError when there is no live tip,
// and the store's error otherwise.
func (a *Agent) leaseTip(ctx context.Context, sess *store.Session, rows ...*store.Message) (*store.Session, store.Lease, error) {
	for hop := 0; ; hop++ {
		lease, err := a.acquireWaiting(ctx, sess.ID, rows)
		if err == nil {
			// Not cut by ctx either: the lease is held and the rows are
			// written, so the turn goes on (and ends at once if ctx ended).
			gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseReleaseTimeout)
			cur, err := a.cfg.Store.GetSession(gctx, sess.ID)
			cancel()
			if err != nil {
				a.releaseQuietly(ctx, lease)
				return sess, store.Lease{}, &tipError{id: sess.ID, err: err}
			}
			return cur, lease, nil
		}
		if !errors.Is(err, store.ErrEnded) {
			return sess, store.Lease{}, err
		}
		if hop >= maxAdoptions {
			return sess, store.Lease{}, &tipError{id: sess.ID, moving: true,
				err: fmt.Errorf("session %s: still moving after %d continuations: %w", sess.ID, hop, store.ErrEnded)}
		}
		tip, err := store.ResolveTip(ctx, a.cfg.Store, sess.ID)
		if err != nil {
			return sess, store.Lease{}, &tipError{id: sess.ID, err: err}
		}
		a.log.Info("session ended while waiting for its lease; continuing in its tip", "from", sess.ID, "to", tip.ID)
		sess = tip
	}
}

// acquireWaiting takes a live session's lease, writing rows with it,
// waiting up to AdmitWait for another holder (see leaseTip).
func (a *Agent) acquireWaiting(ctx context.Context, sessionID string, rows []*store.Message) (store.Lease, error) {
	deadline := a.now().Add(a.cfg.AdmitWait)
	wait := leaseRetryFirst
	for {
		if err := ctx.Err(); err != nil {
			return store.Lease{}, err
		}
		lease, err := a.acquire(ctx, sessionID, rows)
		var held *store.LeaseHeldError
		switch {
		case err == nil:
			return lease, nil
		case !errors.As(err, &held):
			if ctx.Err() != nil {
				return store.Lease{}, ctx.Err()
			}
			return store.Lease{}, err
		}
		left := deadline.Sub(a.now())
		if left <= 0 {
			return store.Lease{}, err
		}
		t := time.NewTimer(min(wait, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return store.Lease{}, ctx.Err()
		case <-t.C:
		}
		wait = min(wait*2, leaseRetryMax)
	}
}

// acquire tries once to take a live session's lease, writing rows with it.
// A lease whose holder is a killed process on this host (see holderGone)
// is released and taken at once: after a kill -9 the session is usable
// again right away instead of when the dead turn's lease expires.
// Releasing by the dead holder's token frees nothing if anyone else got
// the lease meanwhile.
//
// The write is not cut by ctx (only bounded in time): a cancel that lands
// as it commits would leave its outcome unknown — the lease taken and the
// user's message stored, or neither — and the caller would then save the
// message a second time as unsent and leave the lease to expire. Finished,
// its outcome is known; the caller checks ctx before each try.
func (a *Agent) acquire(ctx context.Context, sessionID string, rows []*store.Message) (store.Lease, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseReleaseTimeout)
	defer cancel()
	lease, err := a.cfg.Store.AcquireLeaseAppend(ctx, sessionID, a.cfg.Holder, a.cfg.LeaseTTL, rows...)
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
	return a.cfg.Store.AcquireLeaseAppend(ctx, sessionID, a.cfg.Holder, a.cfg.LeaseTTL, rows...)
}

func (a *Agent) releaseQuietly(ctx context.Context, l store.Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseReleaseTimeout)
	defer cancel()
	if err := a.cfg.Store.ReleaseLease(rctx, l); err != nil {
		a.log.Warn("could not release a turn lease; it expires by itself", "session", l.SessionID, "error", err)
	}
}

// admit admits a turn on sess's live tip (leaseTip), writing the user's
// message with the lease; it returns that row as stored. When it cannot it
// returns the turn's result instead: a session with no live tip fails
// closed (the error says why); a timeout (busy), an interrupt or a store
// failure end the turn early after saving the user's message as an
// unsent, display-only row, so nothing typed is lost and the running
// turn's rows are not disturbed.
func (a *Agent) admit(ctx context.Context, sess *store.Session, msg llm.Message, turnID string) (*store.Session, store.Lease, *store.Message, *turn.Result, error) {
	user := &store.Message{Message: msg, TurnID: turnID, CreatedAt: a.now()}
	user.Role = llm.RoleUser
	sess, lease, err := a.leaseTip(ctx, sess, user)
	var te *tipError
	var held *store.LeaseHeldError
	switch {
	case err == nil:
		return sess, lease, user, nil, nil
	case errors.As(err, &te):
		res := &turn.Result{SessionID: sess.ID, TurnID: turnID}
		res.Fail(turn.ExitSessionFailed, &turn.Failure{Message: sessionError(te.id, te.err), Detail: te.err.Error()})
		res.Explanation = res.Failure.Message
		return sess, store.Lease{}, nil, res, err
	case errors.As(err, &held):
		return sess, store.Lease{}, nil, a.early(ctx, sess, msg, turnID, turn.ExitBusy, &turn.Failure{
			Retryable: true,
			Message: fmt.Sprintf("Session %s is busy: another turn (held by %s) is still running. Your message was saved but not sent; send it again when that turn ends.",
				sess.ID, held.Holder),
		}), nil
	case ctx.Err() != nil:
		return sess, store.Lease{}, nil, a.early(ctx, sess, msg, turnID, turn.ExitInterrupted, nil), nil
	}
	return sess, store.Lease{}, nil, a.early(ctx, sess, msg, turnID, turn.ExitPersistenceFailed, turn.StoreFailure("Could not start the turn", err)), nil
}

// early builds the result of a turn that was never admitted and keeps the
// user's message as an unsent row.
func (a *Agent) early(ctx context.Context, sess *store.Session, msg llm.Message, turnID string, exit turn.Exit, f *turn.Failure) *turn.Result {
	res := &turn.Result{SessionID: sess.ID, TurnID: turnID, Provider: sess.Provider, Model: sess.Model}
	res.Fail(exit, f)
	if exit == turn.ExitInterrupted {
		res.Explanation = "The turn was interrupted while waiting for the session to become free; your message was saved but not sent."
	} else if f != nil {
		res.Explanation = f.Message
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseReleaseTimeout)
	defer cancel()
	row := &store.Message{Message: msg, TurnID: turnID, Kind: store.RowUnsent, CreatedAt: a.now()}
	if err := a.appendUnsent(dctx, sess.ID, row); err != nil {
		a.log.Warn("could not save the unsent message", "session", sess.ID, "error", err)
	}
	return res
}

// appendUnsent keeps the message of a turn that was never admitted. A
// session that ended meanwhile (rotated by the turn that held it) gets it
// at its live tip instead, so nothing typed is lost.
func (a *Agent) appendUnsent(ctx context.Context, sessionID string, row *store.Message) error {
	err := a.cfg.Store.Append(ctx, store.Fence{SessionID: sessionID}, row)
	if !errors.Is(err, store.ErrEnded) {
		return err
	}
	tip, terr := store.ResolveTip(ctx, a.cfg.Store, sessionID)
	if terr != nil {
		return errors.Join(err, terr)
	}
	return a.cfg.Store.Append(ctx, store.Fence{SessionID: tip.ID}, row)
}

// turnLease is the lease a running turn holds. A rotation moves it to the
// child session; the refresher renews whichever it holds now and the
// facade releases it at the end.
type turnLease struct {
	mu sync.Mutex
	l  store.Lease
}

func (t *turnLease) get() store.Lease {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.l
}

func (t *turnLease) set(l store.Lease) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.l = l
}

// renewed records a refresh of old, unless a rotation replaced old while
// the refresh was under way.
func (t *turnLease) renewed(old, next store.Lease) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if sameLease(t.l, old) {
		t.l = next
	}
}

// moved reports whether the lease is no longer old: a rotation released
// old on purpose, so a failure to refresh it means nothing.
func (t *turnLease) moved(old store.Lease) bool {
	return !sameLease(t.get(), old)
}

func sameLease(a, b store.Lease) bool { return a.SessionID == b.SessionID && a.Token == b.Token }

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
