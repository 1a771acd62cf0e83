package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// maxAdoptions bounds how often one turn moves to a newer tip because the
// session it was admitted to had ended meanwhile.
const maxAdoptions = 3

// leaseReleaseTimeout bounds releasing a lease on the way out.
const leaseReleaseTimeout = 10 * time.Second

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

// rotator continues a turn's session in a child session at each
// compression (turn.Rotator). A second compression in the same turn
// rotates again, from the child.
type rotator struct {
	a      *Agent
	parent *store.Session
	lease  *turnLease
}

// Rotate implements turn.Rotator.
func (r *rotator) Rotate(ctx context.Context, rows []*store.Message) (*store.Session, store.Fence, error) {
	child, err := r.a.rotate(ctx, r.parent, r.lease, rows)
	if err != nil {
		return nil, store.Fence{}, err
	}
	r.parent = child
	return child, r.lease.get().Fence(), nil
}

// rotate moves a session's live transcript to a new child session: it
// creates the child (same system prompt, ParentID = parent), takes the
// child's lease for this holder, writes rows there, ends the parent with
// store.EndCompression and releases the parent's lease, leaving tl holding
// the child's. The parent keeps its rows as they were.
//
// The order makes every crash point safe: until the parent is ended it is
// the live tip and the child a stray copy no lineage walk reaches; from
// then on the child is complete. Ending a session is not fenced, so the
// parent's lease is renewed right before: a successful renewal puts its
// expiry a full LeaseTTL away, and no other holder can take a lease over
// before it expires, so nobody else can be writing to the parent when it
// ends. If the renewal fails, the child is removed and nothing changed.
func (a *Agent) rotate(ctx context.Context, parent *store.Session, tl *turnLease, rows []*store.Message) (*store.Session, error) {
	now := a.now()
	child := &store.Session{
		ID:           store.NewID(now),
		Title:        parent.Title,
		Provider:     parent.Provider,
		Model:        parent.Model,
		ParentID:     parent.ID,
		SystemPrompt: parent.SystemPrompt,
		Cwd:          parent.Cwd,
		Principal:    parent.Principal,
		StartedAt:    now,
		UpdatedAt:    now,
	}
	if err := a.cfg.Store.CreateSession(ctx, child); err != nil {
		return nil, fmt.Errorf("rotate session %s: create the continuation: %w", parent.ID, err)
	}
	childLease, err := a.cfg.Store.AcquireLease(ctx, child.ID, a.cfg.Holder, a.cfg.LeaseTTL)
	if err != nil {
		a.discardChild(ctx, child.ID, store.Lease{})
		return nil, fmt.Errorf("rotate session %s: lease the continuation: %w", parent.ID, err)
	}
	if err := a.cfg.Store.Append(ctx, childLease.Fence(), rows...); err != nil {
		a.discardChild(ctx, child.ID, childLease)
		return nil, fmt.Errorf("rotate session %s: write the continuation: %w", parent.ID, err)
	}
	old := tl.get()
	renewed, err := a.cfg.Store.RefreshLease(ctx, old, a.cfg.LeaseTTL)
	if err != nil {
		a.discardChild(ctx, child.ID, childLease)
		return nil, fmt.Errorf("rotate session %s: %w", parent.ID, err)
	}
	if err := a.cfg.Store.EndSession(ctx, parent.ID, store.EndCompression); err != nil {
		a.discardChild(ctx, child.ID, childLease)
		return nil, fmt.Errorf("rotate session %s: end it: %w", parent.ID, err)
	}
	tl.set(childLease)
	if err := a.cfg.Store.ReleaseLease(ctx, renewed); err != nil {
		a.log.Warn("could not release the rotated session's lease; it expires by itself", "session", parent.ID, "error", err)
	}
	a.log.Info("session continues in a new session after compression", "from", parent.ID, "to", child.ID)
	return child, nil
}

// discardChild removes a continuation that never became the tip.
func (a *Agent) discardChild(ctx context.Context, id string, l store.Lease) {
	if l.Token != 0 {
		_ = a.cfg.Store.ReleaseLease(ctx, l)
	}
	if err := a.cfg.Store.DeleteSession(ctx, id); err != nil {
		a.log.Warn("could not remove an unused continuation session", "session", id, "error", err)
	}
}

// admitTip admits a turn on sess and then checks, holding the lease, that
// sess is still live: a session rotated while this turn waited for it
// moves the turn to the newest tip (at most maxAdoptions times), and a
// session that ended for good fails closed. Rotation ends a session only
// under its lease, so one seen live under the lease stays live for the
// turn.
func (a *Agent) admitTip(ctx context.Context, sess *store.Session, msg llm.Message, turnID string) (*store.Session, store.Lease, *turn.Result, error) {
	for hop := 0; ; hop++ {
		lease, early := a.admit(ctx, sess, msg, turnID)
		if early != nil {
			return sess, store.Lease{}, early, nil
		}
		cur, err := a.cfg.Store.GetSession(ctx, sess.ID)
		if err == nil && cur.Live() {
			return cur, lease, nil, nil
		}
		a.releaseQuietly(ctx, lease)
		if err == nil {
			if hop >= maxAdoptions {
				err = fmt.Errorf("session %s: still moving after %d continuations: %w", sess.ID, hop, store.ErrEnded)
			} else {
				var tip *store.Session
				if tip, err = store.ResolveTip(ctx, a.cfg.Store, sess.ID); err == nil {
					a.log.Info("session ended while the turn waited; continuing in its tip", "from", sess.ID, "to", tip.ID)
					sess = tip
					continue
				}
			}
		}
		res := &turn.Result{SessionID: sess.ID, TurnID: turnID, Exit: turn.ExitFailed,
			Failure: &turn.Failure{Class: failover.ClassSession, Message: sessionError(sess.ID, err), Detail: err.Error()}}
		res.Explanation = res.Failure.Message
		return sess, store.Lease{}, res, err
	}
}

func (a *Agent) releaseQuietly(ctx context.Context, l store.Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseReleaseTimeout)
	defer cancel()
	if err := a.cfg.Store.ReleaseLease(rctx, l); err != nil {
		a.log.Warn("could not release a turn lease; it expires by itself", "session", l.SessionID, "error", err)
	}
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
