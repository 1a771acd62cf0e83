package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// Append stores copies of msgs in order, fenced by f, and assigns ID, Seq,
// SessionID and CreatedAt (when zero) on the given values.
func (m *Store) Append(ctx context.Context, f store.Fence, msgs ...*store.Message) error {
	if len(msgs) == 0 {
		return m.ready(ctx, "append")
	}
	return m.write(ctx, "append", f, msgs, nil, store.Spend{})
}

// AppendSpend is Append that adds sp to the session's counters in the same
// step.
func (m *Store) AppendSpend(ctx context.Context, f store.Fence, sp store.Spend, msgs ...*store.Message) error {
	if len(msgs) == 0 && sp.IsZero() {
		return m.ready(ctx, "append")
	}
	return m.write(ctx, "append", f, msgs, nil, sp)
}

// Replace archives the session's live rows with Seq <= throughSeq and
// appends msgs.
func (m *Store) Replace(ctx context.Context, f store.Fence, throughSeq int64, msgs ...*store.Message) error {
	return m.write(ctx, "replace", f, msgs, func(s *session) error {
		for i := range s.rows {
			if s.rows[i].Seq <= throughSeq {
				s.rows[i].Archived = true
			}
		}
		return nil
	}, store.Spend{})
}

// SetSystemPrompt replaces the session's prompt and stamp while the stored
// stamp is from, and appends msgs (see store.Messages).
func (m *Store) SetSystemPrompt(ctx context.Context, f store.Fence, from, prompt, stamp string, msgs ...*store.Message) error {
	return m.write(ctx, "set system prompt", f, msgs, func(s *session) error {
		if s.s.PromptStamp != from {
			return store.ErrStampChanged
		}
		s.s.SystemPrompt, s.s.PromptStamp = prompt, stamp
		return nil
	}, store.Spend{})
}

// ready checks ctx and that the store is open, for a call that writes
// nothing.
func (m *Store) ready(ctx context.Context, op string) error {
	if err := m.begin(ctx, op); err != nil {
		return err
	}
	m.mu.Unlock()
	return nil
}

// write is Append, AppendSpend, Replace and SetSystemPrompt: admit f, then
// before (when not nil), then the rows and the spend. Everything it
// changes is checked first, so a refusal changes nothing.
func (m *Store) write(ctx context.Context, op string, f store.Fence, msgs []*store.Message,
	before func(s *session) error, sp store.Spend) error {
	if err := checkRows(msgs); err != nil {
		return other(op, err)
	}
	s, err := m.lockAdmitted(ctx, op, f)
	if err != nil {
		return err
	}
	defer m.mu.Unlock()
	if before != nil {
		if err := before(s); err != nil {
			return &store.Error{Op: op, Kind: store.KindOther, Err: err}
		}
	}
	if !sp.IsZero() {
		s.addSpend(sp)
	}
	m.insert(s, msgs)
	return nil
}

func checkRows(msgs []*store.Message) error {
	for i, msg := range msgs {
		if msg == nil {
			return fmt.Errorf("message %d is nil", i)
		}
	}
	return nil
}

// admit checks that the session exists and is live and that f is its
// current, unreleased lease (unless f.Token is 0). Expiry alone does not
// void a token: until someone else takes the lease, its holder may write.
func (m *Store) admit(op string, f store.Fence) (*session, error) {
	s, err := m.get(op, f.SessionID)
	if err != nil {
		return nil, err
	}
	if !s.s.EndedAt.IsZero() {
		reason := s.s.EndReason
		if reason == "" {
			reason = "no reason given"
		}
		return nil, &store.Error{Op: op, Kind: store.KindEnded,
			Err: fmt.Errorf("session %s (ended: %s): %w", f.SessionID, reason, store.ErrEnded)}
	}
	if f.Token == 0 {
		return s, nil
	}
	var why string
	switch {
	case s.lease == nil:
		why = "no lease was ever taken"
	case s.lease.Token != f.Token:
		why = fmt.Sprintf("the lease is now at token %d", s.lease.Token)
	case s.released:
		why = "the lease was released"
	default:
		return s, nil
	}
	return nil, &store.Error{Op: op, Kind: store.KindLeaseLost,
		Err: fmt.Errorf("session %s, token %d: %s", f.SessionID, f.Token, why)}
}

// insert stores copies of msgs with the next ids and seqs and publishes
// what it assigned on the caller's values.
func (m *Store) insert(s *session, msgs []*store.Message) {
	t := now()
	s.rows = slices.Grow(s.rows, len(msgs))
	for _, msg := range msgs {
		m.lastID++
		s.lastSeq++
		msg.ID, msg.Seq, msg.SessionID = m.lastID, s.lastSeq, s.s.ID
		if msg.CreatedAt.IsZero() {
			msg.CreatedAt = t
		}
		s.rows = append(s.rows, copyMessage(*msg))
	}
}

// Delete removes the session's rows with the given IDs, fenced by f; ids
// of no row of the session are ignored. Seqs are never handed out again.
func (m *Store) Delete(ctx context.Context, f store.Fence, ids ...int64) error {
	const op = "delete"
	if len(ids) == 0 {
		return m.ready(ctx, op)
	}
	s, err := m.lockAdmitted(ctx, op, f)
	if err != nil {
		return err
	}
	defer m.mu.Unlock()
	s.rows = slices.DeleteFunc(s.rows, func(r store.Message) bool { return slices.Contains(ids, r.ID) })
	return nil
}

// Messages returns copies of a session's rows ordered by Seq; archived rows
// only with q.IncludeArchived. An unknown session is store.ErrNotFound.
func (m *Store) Messages(ctx context.Context, sessionID string, q store.MessageQuery) ([]store.Message, error) {
	const op = "messages"
	s, err := m.lockSession(ctx, op, sessionID)
	if err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	// Rows are kept in seq order: the first row after AfterSeq is found
	// by binary search.
	from, _ := slices.BinarySearchFunc(s.rows, q.AfterSeq+1, func(r store.Message, seq int64) int {
		return cmp.Compare(r.Seq, seq)
	})
	n := len(s.rows) - from
	if q.Limit > 0 {
		n = min(n, q.Limit)
	}
	out := make([]store.Message, 0, n+max(q.Spare, 0))
	for _, r := range s.rows[from:] {
		if q.Limit > 0 && len(out) == q.Limit {
			break
		}
		if r.Archived && !q.IncludeArchived {
			continue
		}
		out = append(out, copyMessage(r))
	}
	return out, nil
}

// copyMessage copies everything a caller could change through a message:
// its slices, the parts' data and the reasoning.
func copyMessage(r store.Message) store.Message {
	r.Message = copyLLM(r.Message)
	return r
}

func copyLLM(msg llm.Message) llm.Message {
	if msg.Content != nil {
		msg.Content = slices.Clone(msg.Content)
		for i := range msg.Content {
			if d := msg.Content[i].Data; d != nil {
				msg.Content[i].Data = slices.Clone(d)
			}
		}
	}
	if msg.ToolCalls != nil {
		msg.ToolCalls = slices.Clone(msg.ToolCalls)
	}
	if msg.Reasoning != nil {
		r := *msg.Reasoning
		if r.Blocks != nil {
			r.Blocks = slices.Clone(r.Blocks)
		}
		if r.Items != nil {
			r.Items = slices.Clone(r.Items)
			for i := range r.Items {
				if r.Items[i] != nil {
					r.Items[i] = slices.Clone(r.Items[i])
				}
			}
		}
		msg.Reasoning = &r
	}
	return msg
}

// Leases.

// AcquireLease takes the session's turn lease for holder with a new,
// larger token, unless another holder's unreleased lease has not expired
// (*store.LeaseHeldError, without waiting). The session must exist.
func (m *Store) AcquireLease(ctx context.Context, sessionID, holder string, ttl time.Duration) (store.Lease, error) {
	return m.acquire(ctx, sessionID, holder, ttl, nil, false)
}

// AcquireLeaseAppend takes the lease of a live session and appends msgs
// under its fence, in one step (see store.Leases).
func (m *Store) AcquireLeaseAppend(ctx context.Context, sessionID, holder string, ttl time.Duration, msgs ...*store.Message) (store.Lease, error) {
	return m.acquire(ctx, sessionID, holder, ttl, msgs, true)
}

func (m *Store) acquire(ctx context.Context, sessionID, holder string, ttl time.Duration, msgs []*store.Message, live bool) (store.Lease, error) {
	const op = "acquire lease"
	if ttl <= 0 {
		return store.Lease{}, other(op, fmt.Errorf("lease ttl %v: must be positive", ttl))
	}
	if err := checkRows(msgs); err != nil {
		return store.Lease{}, other(op, err)
	}
	s, err := m.lockSession(ctx, op, sessionID)
	if err != nil {
		return store.Lease{}, err
	}
	defer m.mu.Unlock()
	t := now()
	var token int64
	if cur := s.lease; cur != nil {
		if !s.released && cur.Holder != holder && cur.ExpiresAt.After(t) {
			return store.Lease{}, &store.LeaseHeldError{SessionID: sessionID, Holder: cur.Holder, Token: cur.Token, ExpiresAt: cur.ExpiresAt}
		}
		token = cur.Token
	}
	l := store.Lease{SessionID: sessionID, Holder: holder, Token: token + 1, AcquiredAt: t, ExpiresAt: t.Add(ttl)}
	if live && !s.s.EndedAt.IsZero() {
		// Checked as the write under the new token would be, before
		// anything changes.
		prev, prevReleased := s.lease, s.released
		s.lease, s.released = &l, false
		_, err := m.admit(op, l.Fence())
		s.lease, s.released = prev, prevReleased
		return store.Lease{}, err
	}
	s.lease, s.released = &l, false
	m.insert(s, msgs)
	return l, nil
}

// RefreshLease extends l by ttl from now while l's token is current and
// unreleased, even past expiry as long as nobody took over; otherwise the
// error wraps store.ErrLeaseLost.
func (m *Store) RefreshLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	const op = "refresh lease"
	if ttl <= 0 {
		return store.Lease{}, other(op, fmt.Errorf("lease ttl %v: must be positive", ttl))
	}
	if err := m.begin(ctx, op); err != nil {
		return store.Lease{}, err
	}
	defer m.mu.Unlock()
	s := m.sessions[l.SessionID]
	if s == nil || s.lease == nil || s.released || s.lease.Token != l.Token || s.lease.Holder != l.Holder {
		return store.Lease{}, &store.Error{Op: op, Kind: store.KindLeaseLost,
			Err: fmt.Errorf("session %s, token %d: taken over or released", l.SessionID, l.Token)}
	}
	l.ExpiresAt = now().Add(ttl)
	s.lease.ExpiresAt = l.ExpiresAt
	return l, nil
}

// ReleaseLease gives l up; the next acquire gets a larger token. Releasing
// a lost or released lease is not an error.
func (m *Store) ReleaseLease(ctx context.Context, l store.Lease) error {
	if err := m.begin(ctx, "release lease"); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if s := m.sessions[l.SessionID]; s != nil && s.lease != nil && !s.released && s.lease.Token == l.Token {
		s.released = true
		s.lease.ExpiresAt = now()
	}
	return nil
}
