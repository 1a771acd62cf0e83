package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/talaria-agent/talaria/catalogue"
	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// ModelInfo is the catalogue entry of the primary route's model.
func (a *Agent) ModelInfo() catalogue.Model {
	return a.Catalogue().Lookup(a.cfg.Routes[0].Model)
}

// Catalogue is the model catalogue the agent's turns use.
func (a *Agent) Catalogue() *catalogue.Catalogue { return a.engine.Config().Catalogue }

// Threshold is the prompt size, in tokens, at which a turn on the primary
// model compresses first.
func (a *Agent) Threshold() int {
	info := a.ModelInfo()
	return a.cfg.Threshold.For(info).Limit(info.Window)
}

// CompactResult is what Compact did.
type CompactResult struct {
	compact.Output
	// SessionID is the session that holds the compressed transcript: the
	// one compacted, or its new continuation when RotateOnCompression is
	// set.
	SessionID string
	// Rotated is set when the session was continued in SessionID.
	Rotated bool
}

// Compact compresses a session's context now, whatever its size (the
// /compact command). It follows an ended session to its live tip and takes
// the tip's turn lease the way a turn does (leaseTip), so it never runs
// inside a turn; the engine compresses and persists (turn.CompactSession),
// continuing the session in a child when RotateOnCompression is set.
func (a *Agent) Compact(ctx context.Context, sessionID string) (CompactResult, error) {
	if a.cfg.Compressor == nil {
		return CompactResult{}, turn.ErrCompressionDisabled
	}
	sess, err := store.ResolveTip(ctx, a.cfg.Store, sessionID)
	if err != nil {
		return CompactResult{}, errors.New(sessionError(sessionID, err))
	}
	sess, lease, err := a.leaseTip(ctx, sess)
	var te *tipError
	switch {
	case errors.As(err, &te) && te.moving:
		return CompactResult{}, fmt.Errorf("session %s keeps moving to new continuations; try again", sessionID)
	case errors.As(err, &te):
		return CompactResult{}, errors.New(sessionError(sessionID, te.err))
	case err != nil:
		return CompactResult{}, err
	}
	tl := &turnLease{l: lease}
	defer func() { a.releaseQuietly(ctx, tl.get()) }()
	var rot turn.Rotator
	if a.cfg.RotateOnCompression {
		rot = &rotator{a: a, parent: sess, lease: tl}
	}
	out, err := a.engine.CompactSession(ctx, sess, lease.Fence(), rot)
	return CompactResult{Output: out.Output, SessionID: out.Session.ID, Rotated: out.Rotated}, err
}
