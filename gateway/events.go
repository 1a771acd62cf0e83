package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/internal/apiview"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// EventType names a Server-Sent Event (api.EventType, the one list of
// them, which the Go client reads too).
type EventType = api.EventType

// Event ids: a stored row's event has id seq<<seqShift; live events that
// follow it take the next ids below the next row's. So ids only grow within
// a session, rows keep their ids when rebuilt from the database, and
// "everything after id N" is "rows with seq > N>>seqShift, plus live events
// with a larger id".
const (
	seqShift = 24
	// restartK is where live ids after a fresh hub (a restart) start within
	// the newest row's slot, above any live id an earlier process gave out
	// there.
	restartK = 1 << (seqShift - 1)
	kMax     = 1<<seqShift - 1
)

// Event is one encoded SSE event.
type Event struct {
	ID     int64
	Type   EventType
	TurnID string
	Data   []byte // JSON, encoded once for every subscriber
}

// MessageView is a stored row as clients see it (api.Message).
type MessageView = api.Message

// shown reports whether a stored row is part of what clients see: engine
// scaffolding (continuation nudges, notices) is removed when its turn ends
// and is never shown.
func shown(m *store.Message) bool {
	return !(m.Synthetic && m.Role == llm.RoleUser && (m.Kind == store.RowNudge || m.Kind == store.RowNotice)) && !m.Archived
}

func encode(typ EventType, turnID string, fields map[string]any) []byte {
	if fields == nil {
		fields = map[string]any{}
	}
	fields["type"] = typ
	if turnID != "" {
		fields["turn_id"] = turnID
	}
	b, err := json.Marshal(fields)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"type": typ, "turn_id": turnID, "encode_error": err.Error()})
	}
	return b
}

// hub is one session's event stream: a bounded ring of recent events for
// reconnects, and the live subscribers.
type hub struct {
	mu    sync.Mutex
	seq   int64 // newest stored row seen
	k     int64 // live events after it
	ring  []Event
	max   int
	floor int64 // events with id <= floor may be missing from the ring
	subs  map[*subscriber]struct{}
	// appendMu serialises this session's writes through the observed
	// store, so row events are published in seq order.
	appendMu sync.Mutex
	// shared, when set, is the database stream of a cluster: events are
	// stored there (which gives them their ids) and reach subscribers,
	// here and on every other node, through receive (see cluster.go).
	shared    *sharedStream
	sessionID string
	fetchMu   sync.Mutex // one catch-up read from the database at a time
	used      uint64     // hubs.clock at the last get (hubs.mu)
}

func newHub(lastSeq int64, ringSize int) *hub {
	h := &hub{seq: lastSeq, k: restartK, max: ringSize, subs: map[*subscriber]struct{}{}}
	h.floor = lastSeq<<seqShift | restartK
	return h
}

type subscriber struct {
	ch      chan Event
	dropped chan struct{} // closed when the hub dropped it for falling behind
}

// publish sends a live event; it never blocks (on a cluster it waits for
// the database insert).
func (h *hub) publish(typ EventType, turnID string, fields map[string]any) int64 {
	return h.publishData(typ, turnID, encode(typ, turnID, fields))
}

// publishData sends a live event already encoded.
func (h *hub) publishData(typ EventType, turnID string, data []byte) int64 {
	if h.shared != nil {
		return h.shared.publish(h, typ, turnID, data, 0)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.k < kMax {
		h.k++
	}
	ev := Event{ID: h.seq<<seqShift | h.k, Type: typ, TurnID: turnID, Data: data}
	h.deliver(ev)
	return ev.ID
}

// publishRow sends a stored row's event.
func (h *hub) publishRow(m *store.Message) {
	if !shown(m) {
		return
	}
	data := encode(api.EventMessage, m.TurnID, map[string]any{"message": apiview.Message(m)})
	if h.shared != nil {
		h.shared.publish(h, api.EventMessage, m.TurnID, data, m.Seq<<seqShift)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if m.Seq <= h.seq {
		return // an older row (should not happen: appends are serialised)
	}
	h.seq, h.k = m.Seq, 0
	h.deliver(Event{ID: m.Seq << seqShift, Type: api.EventMessage, TurnID: m.TurnID, Data: data})
}

func (h *hub) deliver(ev Event) {
	if len(h.ring) >= h.max {
		h.floor = h.ring[0].ID
		copy(h.ring, h.ring[1:])
		h.ring = h.ring[:len(h.ring)-1]
	}
	h.ring = append(h.ring, ev)
	for s := range h.subs {
		select {
		case s.ch <- ev:
		default:
			// Too far behind: drop it rather than slow the turn; it
			// resumes with Last-Event-ID.
			delete(h.subs, s)
			close(s.dropped)
		}
	}
}

// receive delivers events stored by any node, in id order, skipping
// those already delivered.
func (h *hub) receive(evs []Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range evs {
		if ev.ID <= h.seq<<seqShift|h.k {
			continue
		}
		h.seq, h.k = ev.ID>>seqShift, ev.ID&kMax
		h.deliver(ev)
	}
}

// receiveNext delivers ev when prev, the event stored before it, is the
// last one delivered (or ev already was): nothing lies between, so no read
// is needed. false: events are missing; the relay must read them.
func (h *hub) receiveNext(prev int64, ev Event) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	cur := h.seq<<seqShift | h.k
	switch {
	case ev.ID <= cur:
		return true
	case prev != cur:
		return false
	}
	h.seq, h.k = ev.ID>>seqShift, ev.ID&kMax
	h.deliver(ev)
	return true
}

// lastID is the newest event id given out.
func (h *hub) lastID() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq<<seqShift | h.k
}

// backlog is what a new subscriber gets before live events: the ring's
// events after its resume point, up to upto, the newest id at
// subscription (every later event arrives on the subscriber's channel).
// covered says whether the ring holds all of them; if not, the stored rows
// in (after, upto] must be merged in.
type backlog struct {
	events  []Event
	upto    int64
	covered bool
}

// subscribe registers a subscriber and returns its backlog.
func (h *hub) subscribe(after int64, buf int) (*subscriber, backlog) {
	s := &subscriber{ch: make(chan Event, buf), dropped: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subs[s] = struct{}{}
	bl := backlog{upto: h.seq<<seqShift | h.k, covered: after >= h.floor}
	for _, ev := range h.ring {
		if ev.ID > after {
			bl.events = append(bl.events, ev)
		}
	}
	return s, bl
}

// trim drops the bulk of the ring when nobody listens — streamed deltas,
// which the stored rows supersede, and the row events, which are rebuilt
// from the database — so an idle session costs little memory. Turn-level
// events (turn_finished above all) stay, so a client that reconnects after
// its turn ended still learns how it ended.
func (h *hub) trim() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) > 0 {
		return
	}
	kept := h.ring[:0]
	for _, ev := range h.ring {
		switch ev.Type {
		case api.EventTextDelta, api.EventReasoningDelta, api.EventDiscard, api.EventMessage:
			h.floor = max(h.floor, ev.ID)
		default:
			kept = append(kept, ev)
		}
	}
	clear(h.ring[len(kept):])
	h.ring = kept
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, s)
}

func (h *hub) subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// hubs creates a session's hub on first use, starting after its newest row.
type hubs struct {
	mu       sync.Mutex
	m        map[string]*hub
	st       store.Messages
	ringSize int
	// shared is set on a cluster: hubs start at the database stream's
	// newest id and publish through it.
	shared *sharedStream
	// max bounds the hubs kept; past it full is called (without hs.mu) to
	// evict idle ones, since a hub may be opened without its session's
	// state (a stream of an idle session, a row written by a tool).
	max   int
	full  func()
	clock uint64
}

func (hs *hubs) get(ctx context.Context, sessionID string) (*hub, error) {
	hs.mu.Lock()
	h, ok := hs.m[sessionID]
	if ok {
		hs.clock++
		h.used = hs.clock
	}
	hs.mu.Unlock()
	if ok {
		return h, nil
	}
	// Read outside the lock: a long session must not hold up the others.
	rows, err := hs.st.Messages(ctx, sessionID, store.MessageQuery{IncludeArchived: true})
	if err != nil {
		return nil, err
	}
	var last int64
	if n := len(rows); n > 0 {
		last = rows[n-1].Seq
	}
	var streamed int64
	if hs.shared != nil {
		if streamed, err = hs.shared.cl.LastStreamEventID(ctx, sessionID); err != nil {
			return nil, err
		}
	}
	hs.mu.Lock()
	defer func() {
		over := hs.max > 0 && len(hs.m) > hs.max && hs.full != nil
		hs.mu.Unlock()
		if over {
			hs.full()
		}
	}()
	hs.clock++
	if h, ok := hs.m[sessionID]; ok {
		h.used = hs.clock
		return h, nil // another caller made it meanwhile
	}
	h = newHub(last, hs.ringSize)
	h.used = hs.clock
	if hs.shared != nil {
		// Ids come from the database: start at its newest, and receive
		// (not a restart guess) moves on from there. Not at the newest
		// row: it may be committed but not yet published, and a live
		// event must not take an id in its slot (it would push the row's
		// event off seq<<24). Only a session without stored events (its
		// rows written by the CLI) starts after its rows.
		h.shared, h.sessionID = hs.shared, sessionID
		h.seq, h.k = streamed>>seqShift, streamed&kMax
		if streamed == 0 {
			h.seq, h.k = last, 0
		}
		h.floor = max(h.seq<<seqShift|h.k, last<<seqShift)
	}
	hs.m[sessionID] = h
	return h, nil
}

// all lists the hubs (a cluster node catches every one up after a
// reconnect).
func (hs *hubs) all() map[string]*hub {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	out := make(map[string]*hub, len(hs.m))
	for id, h := range hs.m {
		out[id] = h
	}
	return out
}

func (hs *hubs) lookup(sessionID string) *hub {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.m[sessionID]
}

// inUse reports whether the session's hub has subscribers (or is busy).
func (hs *hubs) inUse(sessionID string) bool {
	hs.mu.Lock()
	h := hs.m[sessionID]
	hs.mu.Unlock()
	if h == nil {
		return false
	}
	if !h.mu.TryLock() {
		return true
	}
	defer h.mu.Unlock()
	return len(h.subs) > 0
}

// evict forgets an idle session's hub unless a subscriber came meanwhile.
func (hs *hubs) evict(sessionID string) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h := hs.m[sessionID]
	if h == nil || !h.mu.TryLock() {
		return
	}
	defer h.mu.Unlock()
	if len(h.subs) == 0 {
		delete(hs.m, sessionID)
	}
}

// idle lists the hubs without a subscriber that keep lacks, least
// recently used first.
func (hs *hubs) idle(keep func(id string) bool) []string {
	type cand struct {
		id   string
		used uint64
	}
	hs.mu.Lock()
	var c []cand
	for id, h := range hs.m {
		if !keep(id) {
			c = append(c, cand{id, h.used})
		}
	}
	hs.mu.Unlock()
	slices.SortFunc(c, func(a, b cand) int { return cmp.Compare(a.used, b.used) })
	out := make([]string, len(c))
	for i := range c {
		out[i] = c[i].id
	}
	return out
}

func (hs *hubs) size() int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return len(hs.m)
}

func (hs *hubs) drop(sessionID string) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	delete(hs.m, sessionID)
}
