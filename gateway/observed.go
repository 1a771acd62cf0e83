package gateway

import (
	"context"

	"github.com/talaria-agent/talaria/store"
)

// observedStore is the store the gateway's agents write through: every row
// a turn commits is published to its session's hub as it commits, in seq
// order, so live clients and clients rebuilding from the database see the
// same events with the same ids.
type observedStore struct {
	store.Store
	hubs *hubs
}

func (o *observedStore) Append(ctx context.Context, f store.Fence, msgs ...*store.Message) error {
	h, err := o.hubs.get(ctx, f.SessionID)
	if err != nil {
		return o.Store.Append(ctx, f, msgs...)
	}
	h.appendMu.Lock()
	defer h.appendMu.Unlock()
	if err := o.Store.Append(ctx, f, msgs...); err != nil {
		return err
	}
	for _, m := range msgs {
		h.publishRow(m)
	}
	return nil
}

func (o *observedStore) Replace(ctx context.Context, f store.Fence, throughSeq int64, msgs ...*store.Message) error {
	h, err := o.hubs.get(ctx, f.SessionID)
	if err != nil {
		return o.Store.Replace(ctx, f, throughSeq, msgs...)
	}
	h.appendMu.Lock()
	defer h.appendMu.Unlock()
	if err := o.Store.Replace(ctx, f, throughSeq, msgs...); err != nil {
		return err
	}
	h.publish(EventStatus, "", map[string]any{"line": "the conversation was compressed", "kind": "compression", "archived_through": throughSeq})
	for _, m := range msgs {
		h.publishRow(m)
	}
	return nil
}

func (o *observedStore) Delete(ctx context.Context, f store.Fence, ids ...int64) error {
	if err := o.Store.Delete(ctx, f, ids...); err != nil {
		return err
	}
	if h, err := o.hubs.get(ctx, f.SessionID); err == nil && len(ids) > 0 {
		h.publish(EventMessageDeleted, "", map[string]any{"ids": ids})
	}
	return nil
}
