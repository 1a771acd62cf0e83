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

// Compact compresses a session's context now, whatever its size (the
// /compact command). It takes the session's turn lease like a turn does.
func (a *Agent) Compact(ctx context.Context, sessionID string) (compact.Output, error) {
	c := a.cfg.Turn.Compressor
	if c == nil {
		return compact.Output{}, errors.New("compression is disabled in the configuration")
	}
	sess, err := store.ResolveTip(ctx, a.cfg.Store, sessionID)
	if err != nil {
		return compact.Output{}, errors.New(sessionError(sessionID, err))
	}
	lease, err := a.acquireWithin(ctx, sess.ID, 5*time.Second)
	if err != nil {
		return compact.Output{}, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_ = a.cfg.Store.ReleaseLease(rctx, lease)
		cancel()
	}()
	rows, err := a.cfg.Store.Messages(ctx, sess.ID, store.MessageQuery{})
	if err != nil {
		return compact.Output{}, err
	}
	if len(rows) == 0 {
		return compact.Output{}, compact.ErrNothingToCompress
	}
	th := a.cfg.Turn.Threshold
	if th == (compact.Threshold{}) {
		th = compact.Threshold{Ratio: 0.5}
	}
	out, err := c.Compress(ctx, compact.Input{
		System: sess.SystemPrompt,
		Rows:   rows,
		Target: th.Limit(a.ModelInfo().Window),
		Force:  true,
	})
	if err != nil {
		return out, fmt.Errorf("compress session %s: %w", sess.ID, err)
	}
	msgs := make([]*store.Message, len(out.Rows))
	for i := range out.Rows {
		r := out.Rows[i]
		msgs[i] = &r
	}
	if err := a.cfg.Store.Replace(ctx, lease.Fence(), rows[len(rows)-1].Seq, msgs...); err != nil {
		return out, fmt.Errorf("save the compressed session: %w", err)
	}
	if out.Usage.Reported {
		cost, _ := a.ModelInfo().Cost(out.Usage)
		_ = a.cfg.Store.AddUsage(ctx, sess.ID, out.Usage, cost, 1)
	}
	return out, nil
}

// acquireWithin takes a session's lease, waiting up to d for another holder.
func (a *Agent) acquireWithin(ctx context.Context, sessionID string, d time.Duration) (store.Lease, error) {
	deadline := time.Now().Add(d)
	for {
		l, err := a.cfg.Store.AcquireLease(ctx, sessionID, a.cfg.Holder, a.cfg.LeaseTTL)
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
