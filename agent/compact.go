package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/store"
)

// ModelInfo is the catalogue entry of the primary route's model.
func (a *Agent) ModelInfo() compact.ModelInfo {
	return a.cfg.Turn.Catalogue.Lookup(a.cfg.Turn.Routes[0].Model)
}

// Catalogue is the model catalogue the agent's turns use.
func (a *Agent) Catalogue() *compact.Catalogue { return a.cfg.Turn.Catalogue }

// Threshold is the prompt size, in tokens, at which a turn on the primary
// model compresses first.
func (a *Agent) Threshold() int {
	info := a.ModelInfo()
	return info.Threshold.Or(a.cfg.Turn.Threshold).Limit(info.Window)
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
// the tip's turn lease like a turn does, so it never runs inside a turn.
func (a *Agent) Compact(ctx context.Context, sessionID string) (CompactResult, error) {
	c := a.cfg.Turn.Compressor
	if c == nil {
		return CompactResult{}, errors.New("compression is disabled in the configuration (compression.disabled)")
	}
	sess, lease, err := a.leaseTip(ctx, sessionID)
	if err != nil {
		return CompactResult{}, err
	}
	tl := &turnLease{l: lease}
	defer a.releaseQuietly(ctx, tl.get())
	res := CompactResult{SessionID: sess.ID}
	rows, err := a.cfg.Store.Messages(ctx, sess.ID, store.MessageQuery{})
	if err != nil {
		return res, err
	}
	if len(rows) == 0 {
		return res, fmt.Errorf("session %s: %w", sess.ID, compact.ErrNothingToCompress)
	}
	out, err := c.Compress(ctx, compact.Input{
		System: sess.SystemPrompt,
		Tools:  a.tools.Specs(),
		Rows:   rows,
		Target: a.Threshold(),
		Force:  true,
	})
	res.Output = out
	if err != nil {
		return res, fmt.Errorf("compress session %s: %w", sess.ID, err)
	}
	msgs := make([]*store.Message, len(out.Rows))
	for i := range out.Rows {
		r := out.Rows[i]
		msgs[i] = &r
	}
	if a.cfg.RotateOnCompression {
		child, err := a.rotate(ctx, sess, tl, msgs)
		if err != nil {
			return res, err
		}
		res.SessionID, res.Rotated = child.ID, true
	} else if err := a.cfg.Store.Replace(ctx, lease.Fence(), rows[len(rows)-1].Seq, msgs...); err != nil {
		return res, fmt.Errorf("save the compressed session: %w", err)
	}
	if out.Usage.Reported {
		aux := a.ModelInfo()
		if c.Model != "" {
			aux = a.cfg.Turn.Catalogue.Lookup(c.Model)
		}
		cost, _ := aux.Cost(out.Usage)
		if err := a.cfg.Store.AddUsage(ctx, res.SessionID, out.Usage, cost, 1); err != nil {
			a.log.Warn("could not add the summary's usage to the session", "session", res.SessionID, "error", err)
		}
	}
	return res, nil
}

// leaseTip resolves a session to its live tip and takes the tip's lease,
// waiting a few seconds for a running turn. A tip that ended while it
// waited (rotated by that turn) is followed again, a few times at most.
func (a *Agent) leaseTip(ctx context.Context, sessionID string) (*store.Session, store.Lease, error) {
	id := sessionID
	for hop := 0; hop <= maxAdoptions; hop++ {
		sess, err := store.ResolveTip(ctx, a.cfg.Store, id)
		if err != nil {
			return nil, store.Lease{}, errors.New(sessionError(sessionID, err))
		}
		lease, err := a.acquireWithin(ctx, sess.ID, 5*time.Second)
		if err != nil {
			return nil, store.Lease{}, err
		}
		cur, err := a.cfg.Store.GetSession(ctx, sess.ID)
		if err == nil && cur.Live() {
			return cur, lease, nil
		}
		a.releaseQuietly(ctx, lease)
		if err != nil {
			return nil, store.Lease{}, err
		}
		id = sess.ID
	}
	return nil, store.Lease{}, fmt.Errorf("session %s keeps moving to new continuations; try again", sessionID)
}

// acquireWithin takes a session's lease, waiting up to d for another holder.
func (a *Agent) acquireWithin(ctx context.Context, sessionID string, d time.Duration) (store.Lease, error) {
	deadline := time.Now().Add(d)
	for {
		l, err := a.acquire(ctx, sessionID)
		var held *store.LeaseHeldError
		if err == nil || !errors.As(err, &held) || time.Now().After(deadline) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return l, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
