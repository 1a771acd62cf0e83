package gateway

import (
	"context"
	"time"

	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/store"
)

// observedStore is the store the gateway's agents write through: every row
// a turn commits is published to its session's hub as it commits, in seq
// order, so live clients and clients rebuilding from the database see the
// same events with the same ids.
type observedStore struct {
	Store
	hubs *hubs
}

func (o *observedStore) Append(ctx context.Context, f store.Fence, msgs ...*store.Message) error {
	return o.publishing(ctx, f.SessionID, msgs, func() error { return o.Store.Append(ctx, f, msgs...) })
}

func (o *observedStore) AppendSpend(ctx context.Context, f store.Fence, sp store.Spend, msgs ...*store.Message) error {
	return o.publishing(ctx, f.SessionID, msgs, func() error { return o.Store.AppendSpend(ctx, f, sp, msgs...) })
}

// SetSystemPrompt publishes the row that says the prompt was rebuilt.
func (o *observedStore) SetSystemPrompt(ctx context.Context, f store.Fence, from, prompt, stamp string, msgs ...*store.Message) error {
	return o.publishing(ctx, f.SessionID, msgs, func() error { return o.Store.SetSystemPrompt(ctx, f, from, prompt, stamp, msgs...) })
}

// AcquireLeaseAppend publishes the turn's first rows (the user's message),
// which a turn writes with its lease.
func (o *observedStore) AcquireLeaseAppend(ctx context.Context, sessionID, holder string, ttl time.Duration, msgs ...*store.Message) (store.Lease, error) {
	var l store.Lease
	err := o.publishing(ctx, sessionID, msgs, func() (err error) {
		l, err = o.Store.AcquireLeaseAppend(ctx, sessionID, holder, ttl, msgs...)
		return err
	})
	return l, err
}

// publishing runs write, which stores msgs, under the session hub's append
// lock and publishes msgs once it committed.
func (o *observedStore) publishing(ctx context.Context, sessionID string, msgs []*store.Message, write func() error) error {
	if len(msgs) == 0 {
		return write()
	}
	h, err := o.hubs.get(ctx, sessionID)
	if err != nil {
		return write()
	}
	h.appendMu.Lock()
	defer h.appendMu.Unlock()
	if err := write(); err != nil {
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
	h.publish(api.EventStatus, "", map[string]any{"line": "the conversation was compressed", "kind": "compression", "archived_through": throughSeq})
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
		h.publish(api.EventMessageDeleted, "", map[string]any{"ids": ids})
	}
	return nil
}

// The tool-call ledger passes through (store.ToolLedger); a store without
// one records nothing, as the engine does without a ledger.

func (o *observedStore) ToolStarted(ctx context.Context, rec *store.ToolCallRecord) error {
	if l, ok := o.Store.(store.ToolLedger); ok {
		return l.ToolStarted(ctx, rec)
	}
	return nil
}

func (o *observedStore) ToolFinished(ctx context.Context, rec *store.ToolCallRecord) error {
	if l, ok := o.Store.(store.ToolLedger); ok {
		return l.ToolFinished(ctx, rec)
	}
	return nil
}

func (o *observedStore) ToolCalls(ctx context.Context, sessionID, turnID string) ([]store.ToolCallRecord, error) {
	if l, ok := o.Store.(store.ToolLedger); ok {
		return l.ToolCalls(ctx, sessionID, turnID)
	}
	return nil, nil
}
