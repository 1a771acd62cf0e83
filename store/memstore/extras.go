package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/talaria-agent/talaria/store"
)

// Memory (store.Memories).

func memorySelects(q store.MemoryQuery, e *store.MemoryEntry) bool {
	return e.Workspace == q.Workspace && (e.User == "" || e.User == q.User)
}

// AddMemory stores a copy of e, assigning its ID and, when zero, its
// CreatedAt on e.
func (m *Store) AddMemory(ctx context.Context, e *store.MemoryEntry) error {
	if err := m.begin(ctx, "add memory"); err != nil {
		return err
	}
	defer m.mu.Unlock()
	e.CreatedAt = orNow(e.CreatedAt)
	m.lastMemID++
	e.ID = m.lastMemID
	m.memory = append(m.memory, *e)
	return nil
}

// Memories lists the entries q selects, oldest first.
func (m *Store) Memories(ctx context.Context, q store.MemoryQuery) ([]store.MemoryEntry, error) {
	if err := m.begin(ctx, "memories"); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []store.MemoryEntry
	for i := range m.memory {
		if memorySelects(q, &m.memory[i]) {
			out = append(out, m.memory[i])
		}
	}
	return out, nil
}

// DeleteMemory removes entry id of workspace.
func (m *Store) DeleteMemory(ctx context.Context, workspace string, id int64) error {
	const op = "delete memory"
	if err := m.begin(ctx, op); err != nil {
		return err
	}
	defer m.mu.Unlock()
	n := len(m.memory)
	m.memory = slices.DeleteFunc(m.memory, func(e store.MemoryEntry) bool { return e.ID == id && e.Workspace == workspace })
	if len(m.memory) == n {
		return notFound(op, "memory entry "+strconv.FormatInt(id, 10))
	}
	return nil
}

// ClearMemory removes the entries q selects and returns how many.
func (m *Store) ClearMemory(ctx context.Context, q store.MemoryQuery) (int64, error) {
	if err := m.begin(ctx, "clear memory"); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	n := len(m.memory)
	m.memory = slices.DeleteFunc(m.memory, func(e store.MemoryEntry) bool { return memorySelects(q, &e) })
	return int64(n - len(m.memory)), nil
}

// Turn events (store.TurnEvents).

// AppendTurnEvents stores evs atomically: every session must exist and
// no (session, turn, seq) may be stored already or twice in evs.
func (m *Store) AppendTurnEvents(ctx context.Context, evs ...store.TurnEvent) error {
	const op = "append turn events"
	if err := m.begin(ctx, op); err != nil {
		return err
	}
	defer m.mu.Unlock()
	type key struct {
		session, turn string
		seq           int
	}
	seen := map[key]bool{}
	for _, e := range evs {
		if _, ok := m.sessions[e.SessionID]; !ok {
			return notFound(op, "session "+e.SessionID)
		}
		k := key{e.SessionID, e.TurnID, e.Seq}
		dup := seen[k] || slices.ContainsFunc(m.events[e.SessionID], func(x store.TurnEvent) bool {
			return x.TurnID == e.TurnID && x.Seq == e.Seq
		})
		if dup {
			return other(op, fmt.Errorf("event %d of turn %s of session %s is already stored", e.Seq, e.TurnID, e.SessionID))
		}
		seen[k] = true
	}
	for _, e := range evs {
		m.events[e.SessionID] = append(m.events[e.SessionID], e)
	}
	return nil
}

// TurnEvents lists a session's events, turnID "" for every turn, in the
// order they were appended.
func (m *Store) TurnEvents(ctx context.Context, sessionID, turnID string) ([]store.TurnEvent, error) {
	return ofTurn(ctx, m, "turn events", m.events, sessionID, turnID,
		func(e store.TurnEvent) (store.TurnEvent, string) { return e, e.TurnID })
}

// Tool-call ledger (store.ToolLedger).

func (m *Store) call(sessionID, callID string) *store.ToolCallRecord {
	for _, r := range m.calls[sessionID] {
		if r.CallID == callID {
			return r
		}
	}
	return nil
}

// ToolStarted records rec as started, fenced like Append by
// Fence{rec.SessionID, rec.Fence}; a re-run replaces the record and keeps
// its place.
func (m *Store) ToolStarted(ctx context.Context, rec *store.ToolCallRecord) error {
	const op = "tool started"
	s, err := m.lockSession(ctx, op, rec.SessionID)
	if err != nil {
		return err
	}
	defer m.mu.Unlock()
	if rec.Fence != 0 && (s.lease == nil || s.released || s.lease.Token != rec.Fence) {
		return &store.Error{Op: op, Kind: store.KindLeaseLost,
			Err: fmt.Errorf("session %s, token %d: the lease is not held", rec.SessionID, rec.Fence)}
	}
	rec.StartedAt = orNow(rec.StartedAt)
	rec.State = store.ToolCallStarted
	c := *rec
	c.ResultID, c.IsError, c.AfterHash, c.FinishedAt = 0, false, "", time.Time{}
	if r := m.call(rec.SessionID, rec.CallID); r != nil {
		*r = c
		return nil
	}
	m.calls[rec.SessionID] = append(m.calls[rec.SessionID], &c)
	return nil
}

// ToolFinished marks (rec.SessionID, rec.CallID) finished; a call never
// started is recorded whole. It is not fenced.
func (m *Store) ToolFinished(ctx context.Context, rec *store.ToolCallRecord) error {
	const op = "tool finished"
	if _, err := m.lockSession(ctx, op, rec.SessionID); err != nil {
		return err
	}
	defer m.mu.Unlock()
	rec.FillFinished(now())
	rec.State = store.ToolCallFinished
	if r := m.call(rec.SessionID, rec.CallID); r != nil {
		r.State, r.ResultID, r.IsError, r.AfterHash, r.FinishedAt = rec.State, rec.ResultID, rec.IsError, rec.AfterHash, rec.FinishedAt
		return nil
	}
	c := *rec
	m.calls[rec.SessionID] = append(m.calls[rec.SessionID], &c)
	return nil
}

// ToolCalls lists a session's records, turnID "" for every turn, in the
// order they were first started.
func (m *Store) ToolCalls(ctx context.Context, sessionID, turnID string) ([]store.ToolCallRecord, error) {
	return ofTurn(ctx, m, "tool calls", m.calls, sessionID, turnID,
		func(r *store.ToolCallRecord) (store.ToolCallRecord, string) { return *r, r.TurnID })
}

// ofTurn lists copies of a session's rows in bySession, those of turnID
// (every turn's for ""), in order: the body of TurnEvents and ToolCalls.
// row gives a row's copy and its turn.
func ofTurn[E, T any](ctx context.Context, m *Store, op string, bySession map[string][]E, sessionID, turnID string,
	row func(E) (T, string)) ([]T, error) {
	if err := m.begin(ctx, op); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []T
	for _, e := range bySession[sessionID] {
		if v, turn := row(e); turnID == "" || turn == turnID {
			out = append(out, v)
		}
	}
	return out, nil
}

// Cooldowns (store.Cooldowns).

// SetCooldown benches one credential, replacing an earlier cooldown of the
// same provider, endpoint and key; SetAt is now when zero.
func (m *Store) SetCooldown(ctx context.Context, c store.Cooldown) error {
	if err := m.begin(ctx, "set cooldown"); err != nil {
		return err
	}
	defer m.mu.Unlock()
	c.SetAt = orNow(c.SetAt)
	m.cooldowns[cooldownKey{c.Provider, c.BaseURL, c.KeyID}] = c
	return nil
}

// Cooldowns lists a provider's cooldowns that end after at, soonest first.
func (m *Store) Cooldowns(ctx context.Context, provider string, at time.Time) ([]store.Cooldown, error) {
	if err := m.begin(ctx, "cooldowns"); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []store.Cooldown
	for k, c := range m.cooldowns {
		if k.provider == provider && c.Until.After(at) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b store.Cooldown) int {
		if c := a.Until.Compare(b.Until); c != 0 {
			return c
		}
		if c := cmp.Compare(a.BaseURL, b.BaseURL); c != 0 {
			return c
		}
		return cmp.Compare(a.KeyID, b.KeyID)
	})
	return out, nil
}

// ClearCooldown removes a credential's cooldowns at every endpoint.
func (m *Store) ClearCooldown(ctx context.Context, provider, keyID string) error {
	if err := m.begin(ctx, "clear cooldown"); err != nil {
		return err
	}
	defer m.mu.Unlock()
	for k := range m.cooldowns {
		if k.provider == provider && k.keyID == keyID {
			delete(m.cooldowns, k)
		}
	}
	return nil
}

// Spend ledger (store.SpendLedger).

// AddSpend adds usd to principal's spend of day.
func (m *Store) AddSpend(ctx context.Context, principal, day string, usd float64) error {
	if err := m.begin(ctx, "add spend"); err != nil {
		return err
	}
	defer m.mu.Unlock()
	m.spend[[2]string{principal, day}] += usd
	return nil
}

// Spend is principal's spend of day; 0 when nothing was recorded.
func (m *Store) Spend(ctx context.Context, principal, day string) (float64, error) {
	if err := m.begin(ctx, "spend"); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	return m.spend[[2]string{principal, day}], nil
}
