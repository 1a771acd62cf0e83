package agent

import (
	"context"
	"fmt"

	"github.com/talaria-agent/talaria/store"
)

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
		PromptStamp:  parent.PromptStamp,
		PromptExtra:  parent.PromptExtra,
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
