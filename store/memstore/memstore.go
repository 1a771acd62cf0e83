// Package memstore keeps sessions in memory: a store for embedders that
// need no database and for fast tests. It implements store.SessionService
// (sessions, fenced transcripts, turn leases: what an agent needs to run
// turns) and passes storetest.RunCore; it implements the rest of
// store.Store and both ledgers as well, and passes storetest.Run, so a
// gateway runs on it too. Nothing survives the process; several processes
// never share it (use store/sqlite or store/postgres), and it has no
// store.Cluster.
//
// A Store is safe for concurrent use: one mutex serialises every call, so
// each call is atomic, as a transaction of the SQL backends is. Values are
// copied in and out: a caller cannot change stored data through what it
// passed or got back.
package memstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// defaultListLimit is the page size when ListOptions.Limit is 0, as in
// the SQL backends.
const defaultListLimit = 50

// Store is an in-memory store. The zero value is not usable; call New.
type Store struct {
	mu     sync.Mutex
	closed bool

	sessions map[string]*session
	lastID   int64 // the highest message id handed out, across sessions

	memory    []store.MemoryEntry
	lastMemID int64
	events    map[string][]store.TurnEvent       // by session, in append order
	calls     map[string][]*store.ToolCallRecord // by session, in first-start order
	cooldowns map[cooldownKey]store.Cooldown
	spend     map[[2]string]float64 // principal, day

	tokens      []store.Token
	queue       []store.QueuedMessage // in ID order
	lastQueueID int64
}

type session struct {
	s       store.Session // MessageCount is computed on read
	rows    []store.Message
	lastSeq int64 // the highest seq ever handed out: a deleted seq never comes back
	lease   *store.Lease
	// released marks lease given up (the row stays, so the next token is
	// larger).
	released bool
}

type cooldownKey struct{ provider, baseURL, keyID string }

var (
	_ store.SessionService = (*Store)(nil)
	_ store.Searcher       = (*Store)(nil)
	_ store.Memories       = (*Store)(nil)
	_ store.TurnEvents     = (*Store)(nil)
	_ store.ToolLedger     = (*Store)(nil)
	_ store.Cooldowns      = (*Store)(nil)
	_ store.SpendLedger    = (*Store)(nil)
	_ store.Tokens         = (*Store)(nil)
	_ store.Queue          = (*Store)(nil)
	_ store.Store          = (*Store)(nil)
)

// New returns an empty store.
func New() *Store {
	return &Store{
		sessions:  map[string]*session{},
		events:    map[string][]store.TurnEvent{},
		calls:     map[string][]*store.ToolCallRecord{},
		cooldowns: map[cooldownKey]store.Cooldown{},
		spend:     map[[2]string]float64{},
	}
}

// Close makes every later call fail with store.KindClosed and drops the
// data. Closing twice is not an error.
func (m *Store) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.sessions, m.memory, m.events, m.calls, m.cooldowns, m.spend = nil, nil, nil, nil, nil, nil
	m.tokens, m.queue = nil, nil
	return nil
}

var errClosed = errors.New("the store is closed")

// begin takes the lock for op, checking ctx and that the store is open.
// On success the caller must m.mu.Unlock.
func (m *Store) begin(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return &store.Error{Op: op, Kind: store.KindOther, Err: err}
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return &store.Error{Op: op, Kind: store.KindClosed, Err: errClosed}
	}
	return nil
}

// now is the clock of rows: UTC without a monotonic reading, so a value
// the store sets compares equal to the one read back.
func now() time.Time { return time.Now().UTC().Round(0) }

// orNow is t, or now for the zero time: a time the caller may leave for the
// store to set.
func orNow(t time.Time) time.Time {
	if t.IsZero() {
		return now()
	}
	return t
}

func notFound(op, what string) error {
	return &store.Error{Op: op, Kind: store.KindNotFound, Err: errors.New(what)}
}

func other(op string, err error) error { return &store.Error{Op: op, Kind: store.KindOther, Err: err} }

// get returns session id or a not-found error.
func (m *Store) get(op, id string) (*session, error) {
	if s, ok := m.sessions[id]; ok {
		return s, nil
	}
	return nil, notFound(op, "session "+id)
}

// lockSession is begin, then get id; lockAdmitted is begin, then admit f.
// On success m.mu is held, for the caller to unlock; on failure it is not.
func (m *Store) lockSession(ctx context.Context, op, id string) (*session, error) {
	return m.locked(ctx, op, func() (*session, error) { return m.get(op, id) })
}

func (m *Store) lockAdmitted(ctx context.Context, op string, f store.Fence) (*session, error) {
	return m.locked(ctx, op, func() (*session, error) { return m.admit(op, f) })
}

func (m *Store) locked(ctx context.Context, op string, find func() (*session, error)) (*session, error) {
	if err := m.begin(ctx, op); err != nil {
		return nil, err
	}
	s, err := find()
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	return s, nil
}

// CreateSession stores a copy of sess, filling ID (store.NewID) when empty
// and StartedAt/UpdatedAt when zero on the given value. Creating an
// existing id fails.
func (m *Store) CreateSession(ctx context.Context, sess *store.Session) error {
	const op = "create session"
	if err := m.begin(ctx, op); err != nil {
		return err
	}
	defer m.mu.Unlock()
	t := now()
	if sess.ID == "" {
		id := store.NewID(t)
		for _, taken := m.sessions[id]; taken; _, taken = m.sessions[id] {
			id = store.NewID(t)
		}
		sess.ID = id
	} else if _, ok := m.sessions[sess.ID]; ok {
		return other(op, fmt.Errorf("session %s already exists", sess.ID))
	}
	if sess.StartedAt.IsZero() {
		sess.StartedAt = t
	}
	if sess.UpdatedAt.IsZero() {
		sess.UpdatedAt = sess.StartedAt
	}
	c := *sess
	c.MessageCount = 0
	m.sessions[c.ID] = &session{s: c}
	return nil
}

// view is a session as read: UpdatedAt is the newer of its own and its
// last row's time, MessageCount counts live and archived rows.
func (s *session) view() store.Session {
	v := s.s
	if n := len(s.rows); n > 0 && s.rows[n-1].CreatedAt.After(v.UpdatedAt) {
		v.UpdatedAt = s.rows[n-1].CreatedAt
	}
	v.MessageCount = int64(len(s.rows))
	return v
}

// GetSession returns a copy of session id; an unknown id is
// store.ErrNotFound.
func (m *Store) GetSession(ctx context.Context, id string) (*store.Session, error) {
	const op = "get session"
	s, err := m.lockSession(ctx, op, id)
	if err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	v := s.view()
	return &v, nil
}

// ListSessions lists sessions newest first by UpdatedAt (then id).
func (m *Store) ListSessions(ctx context.Context, opt store.ListOptions) ([]store.Session, error) {
	if err := m.begin(ctx, "list sessions"); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var all []store.Session
	for _, s := range m.sessions {
		if opt.Principal == "" || s.s.Principal == opt.Principal {
			all = append(all, s.view())
		}
	}
	slices.SortFunc(all, func(a, b store.Session) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	limit := opt.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	off := min(max(opt.Offset, 0), len(all))
	return all[off:min(off+limit, len(all))], nil
}

// ChildSessions lists sessions whose ParentID is id, oldest first.
func (m *Store) ChildSessions(ctx context.Context, id string) ([]store.Session, error) {
	if err := m.begin(ctx, "child sessions"); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	if id == "" {
		return nil, nil // "" is "no parent", not a parent
	}
	var out []store.Session
	for _, s := range m.sessions {
		if s.s.ParentID == id {
			out = append(out, s.view())
		}
	}
	slices.SortFunc(out, func(a, b store.Session) int {
		if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out, nil
}

// update runs fn on session id under the lock.
func (m *Store) update(ctx context.Context, op, id string, fn func(s *session)) error {
	s, err := m.lockSession(ctx, op, id)
	if err != nil {
		return err
	}
	defer m.mu.Unlock()
	fn(s)
	return nil
}

// SetTitle renames a session.
func (m *Store) SetTitle(ctx context.Context, id, title string) error {
	return m.update(ctx, "set title", id, func(s *session) { s.s.Title, s.s.UpdatedAt = title, now() })
}

// EndSession marks a session ended with reason; ending an ended session
// keeps the first reason and time.
func (m *Store) EndSession(ctx context.Context, id, reason string) error {
	return m.update(ctx, "end session", id, func(s *session) {
		if s.s.EndedAt.IsZero() {
			t := now()
			s.s.EndedAt, s.s.EndReason, s.s.UpdatedAt = t, reason, t
		}
	})
}

// AddUsage adds to a session's counters; ended sessions too.
func (m *Store) AddUsage(ctx context.Context, id string, u llm.Usage, costUSD float64, apiCalls int64) error {
	return m.update(ctx, "add usage", id, func(s *session) {
		s.addSpend(store.Spend{Usage: u, CostUSD: costUSD, APICalls: apiCalls})
	})
}

func (s *session) addSpend(sp store.Spend) {
	s.s.Usage.Add(sp.Usage)
	s.s.CostUSD += sp.CostUSD
	s.s.APICalls += sp.APICalls
	s.s.UpdatedAt = now()
}

// DeleteSession removes a session with its rows, lease, queue, turn events
// and tool-call records. Child sessions keep their ParentID.
func (m *Store) DeleteSession(ctx context.Context, id string) error {
	const op = "delete session"
	if _, err := m.lockSession(ctx, op, id); err != nil {
		return err
	}
	defer m.mu.Unlock()
	delete(m.sessions, id)
	delete(m.events, id)
	delete(m.calls, id)
	m.queue = slices.DeleteFunc(m.queue, func(q store.QueuedMessage) bool { return q.SessionID == id })
	return nil
}

// SessionModels returns, for each of ids with rows naming a model, the
// provider/model pairs of its rows in order of first use.
func (m *Store) SessionModels(ctx context.Context, ids []string) (map[string][]store.ModelUse, error) {
	if err := m.begin(ctx, "session models"); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := map[string][]store.ModelUse{}
	for _, id := range ids {
		s, ok := m.sessions[id]
		if !ok {
			continue
		}
		for _, r := range s.rows {
			u := store.ModelUse{Provider: r.Provider, Model: r.Model}
			if u.Model != "" && !slices.Contains(out[id], u) {
				out[id] = append(out[id], u)
			}
		}
	}
	return out, nil
}
