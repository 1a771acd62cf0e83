package memstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/talaria-agent/talaria/store"
)

// Gateway tokens (store.Tokens).

// CreateToken stores a copy of t, filling ID and CreatedAt when empty. The
// hash is unique among all tokens, the name among valid ones.
func (m *Store) CreateToken(ctx context.Context, t *store.Token) error {
	const op = "create token"
	if err := t.Prepare(now()); err != nil {
		return other(op, err)
	}
	if err := m.begin(ctx, op); err != nil {
		return err
	}
	defer m.mu.Unlock()
	for _, x := range m.tokens {
		switch {
		case x.ID == t.ID:
			return other(op, fmt.Errorf("token %s already exists", t.ID))
		case x.Hash == t.Hash:
			return other(op, errors.New("a token with this hash already exists"))
		case t.RevokedAt.IsZero() && x.RevokedAt.IsZero() && x.Name == t.Name:
			return other(op, fmt.Errorf("token %q: %w", t.Name, store.ErrTokenNameTaken))
		}
	}
	m.tokens = append(m.tokens, *t)
	return nil
}

// TokenByHash returns the valid token with this hash, or an error wrapping
// store.ErrNotFound.
func (m *Store) TokenByHash(ctx context.Context, hash string) (*store.Token, error) {
	const op = "token by hash"
	if err := m.begin(ctx, op); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	for _, x := range m.tokens {
		if x.Hash == hash && x.RevokedAt.IsZero() {
			return &x, nil
		}
	}
	return nil, notFound(op, "token")
}

// ListTokens lists every token, revoked ones included, oldest first.
func (m *Store) ListTokens(ctx context.Context) ([]store.Token, error) {
	if err := m.begin(ctx, "list tokens"); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := slices.Clone(m.tokens)
	slices.SortStableFunc(out, func(a, b store.Token) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out, nil
}

// RevokeToken revokes a token by ID; revoking twice keeps the first time.
func (m *Store) RevokeToken(ctx context.Context, id string) error {
	const op = "revoke token"
	if err := m.begin(ctx, op); err != nil {
		return err
	}
	defer m.mu.Unlock()
	for i := range m.tokens {
		if x := &m.tokens[i]; x.ID == id {
			if x.RevokedAt.IsZero() {
				x.RevokedAt = now()
			}
			return nil
		}
	}
	return notFound(op, "token "+id)
}

// The gateway's queue (store.Queue).

// Enqueue appends a copy of q to its session's queue, assigning ID (and
// CreatedAt when zero) on q.
func (m *Store) Enqueue(ctx context.Context, q *store.QueuedMessage) error {
	const op = "enqueue"
	if _, err := m.lockSession(ctx, op, q.SessionID); err != nil {
		return err
	}
	defer m.mu.Unlock()
	q.CreatedAt = orNow(q.CreatedAt)
	q.StartedAt = time.Time{}
	m.lastQueueID++
	q.ID = m.lastQueueID
	m.queue = append(m.queue, *q)
	return nil
}

// Queued lists a session's queued messages (every session's for ""), by ID.
func (m *Store) Queued(ctx context.Context, sessionID string) ([]store.QueuedMessage, error) {
	if err := m.begin(ctx, "list queue"); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []store.QueuedMessage
	for _, q := range m.queue {
		if sessionID == "" || q.SessionID == sessionID {
			out = append(out, q)
		}
	}
	return out, nil
}

// MarkStarted records that a queued message's turn began.
func (m *Store) MarkStarted(ctx context.Context, id int64, at time.Time) error {
	const op = "mark queued started"
	if err := m.begin(ctx, op); err != nil {
		return err
	}
	defer m.mu.Unlock()
	for i := range m.queue {
		if m.queue[i].ID == id {
			m.queue[i].StartedAt = at
			return nil
		}
	}
	return notFound(op, "queued message")
}

// Dequeue removes a queued message; a missing one is not an error.
func (m *Store) Dequeue(ctx context.Context, id int64) error {
	if err := m.begin(ctx, "dequeue"); err != nil {
		return err
	}
	defer m.mu.Unlock()
	m.queue = slices.DeleteFunc(m.queue, func(q store.QueuedMessage) bool { return q.ID == id })
	return nil
}
