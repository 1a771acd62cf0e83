package testenv

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// FaultStore wraps a real store so a test can make chosen appends fail with
// a chosen cause, or hold lease refreshes the way a stopped process would.
// Everything else goes to the wrapped store unchanged.
type FaultStore struct {
	store.Store

	mu       sync.Mutex
	onAppend func(msgs []*store.Message) error
	gate     chan struct{} // non-nil: refreshes wait for it to close
	failRef  error         // non-nil: refreshes fail with it
	refresh  int           // RefreshLease calls
	inFlight int           // RefreshLease calls not yet returned
}

// NewFaultStore wraps s, which must be a whole store.Store (an
// agent.Config's Store is typed as the narrower store.SessionService).
func NewFaultStore(s store.SessionService) *FaultStore { return &FaultStore{Store: s.(store.Store)} }

// FailAppends makes every write of rows (Append, AppendSpend, and
// AcquireLeaseAppend given rows) ask fn first: a non-nil error fails the
// write without writing anything. nil lets them through again.
func (f *FaultStore) FailAppends(fn func(msgs []*store.Message) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onAppend = fn
}

// appendFault is FailAppends' verdict on msgs.
func (f *FaultStore) appendFault(msgs []*store.Message) error {
	f.mu.Lock()
	fn := f.onAppend
	f.mu.Unlock()
	if fn == nil || len(msgs) == 0 {
		return nil
	}
	return fn(msgs)
}

// Append implements store.Messages.
func (f *FaultStore) Append(ctx context.Context, fence store.Fence, msgs ...*store.Message) error {
	if err := f.appendFault(msgs); err != nil {
		return err
	}
	return f.Store.Append(ctx, fence, msgs...)
}

// AppendSpend implements store.Messages.
func (f *FaultStore) AppendSpend(ctx context.Context, fence store.Fence, sp store.Spend, msgs ...*store.Message) error {
	if err := f.appendFault(msgs); err != nil {
		return err
	}
	return f.Store.AppendSpend(ctx, fence, sp, msgs...)
}

// AcquireLeaseAppend implements store.Leases.
func (f *FaultStore) AcquireLeaseAppend(ctx context.Context, sessionID, holder string, ttl time.Duration, msgs ...*store.Message) (store.Lease, error) {
	if err := f.appendFault(msgs); err != nil {
		return store.Lease{}, err
	}
	return f.Store.AcquireLeaseAppend(ctx, sessionID, holder, ttl, msgs...)
}

// HoldRefreshes makes RefreshLease block — ignoring its context, like a
// process that was stopped — until the returned function is called.
func (f *FaultStore) HoldRefreshes() (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	gate := make(chan struct{})
	f.gate = gate
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			f.gate = nil
			f.mu.Unlock()
			close(gate)
		})
	}
}

// RefreshLease implements store.Leases.
func (f *FaultStore) RefreshLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	f.mu.Lock()
	f.refresh++
	f.inFlight++
	gate := f.gate
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	if gate != nil {
		<-gate
	}
	f.mu.Lock()
	err := f.failRef
	f.mu.Unlock()
	if err != nil {
		return store.Lease{}, err
	}
	return f.Store.RefreshLease(ctx, l, ttl)
}

// RefreshesInFlight is how many RefreshLease calls have not returned yet.
func (f *FaultStore) RefreshesInFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inFlight
}

// FailRefreshes makes RefreshLease fail with err (nil: succeed again).
func (f *FaultStore) FailRefreshes(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failRef = err
}

// Refreshes is how many times RefreshLease was called.
func (f *FaultStore) Refreshes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refresh
}

// StoreError is a store failure of the given kind, as a backend reports it.
func StoreError(kind store.ErrorKind) error {
	return &store.Error{Op: "append", Kind: kind, Path: "/data/talaria/state.db",
		Err: errors.New("injected " + string(kind) + " failure")}
}

// HasToolCalls reports whether any of msgs is an assistant row with tool
// calls (the row invariant 2 is about).
func HasToolCalls(msgs []*store.Message) bool {
	for _, m := range msgs {
		if m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0 {
			return true
		}
	}
	return false
}

// IsFinalAnswer reports whether msgs is one plain assistant answer (the
// row invariant 4 is about).
func IsFinalAnswer(msgs []*store.Message) bool {
	return len(msgs) == 1 && msgs[0].Role == llm.RoleAssistant && len(msgs[0].ToolCalls) == 0 &&
		msgs[0].Kind == store.RowNormal
}
