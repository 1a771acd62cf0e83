package gateway

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// Several gateway nodes on one database (Config.Cluster):
//
//   - A session's queue lives in the database, and a node runs its head only
//     after claiming it together with the session's turn lease
//     (store.Cluster.ClaimQueued), so turns of a session never overlap
//     wherever their messages arrived. The node that finishes a turn takes
//     the next message itself; a sweep picks up queues nobody runs (a
//     message that arrived while another node's turn ran, a dead node's).
//   - Events are stored in the database, which gives them their ids in
//     commit order, and every node delivers them in id order: the
//     publishing node at once when nothing came in between (the insert
//     returns the id before it), the others by reading what they have not
//     delivered when LISTEN/NOTIFY wakes them (or the sweep: a lost
//     notification costs latency, never an event). So a subscriber on any
//     node sees every turn's events, in order, and resumes from any id.

// settle is how long a message whose turn ended (its lease released) may
// stay on the queue before another node takes it for cut off: the node
// that ran it removes it right after.
const settle = 5 * time.Second

// fetchBatch bounds one catch-up read of stored events.
const fetchBatch = 512

// sharedStream publishes events through the database.
type sharedStream struct {
	cl   store.Cluster
	log  *slog.Logger
	kick func(sessionID string)
}

// publish stores an event (floor: its id at least; 0 for a live event)
// and wakes the local delivery. When the database is unreachable the event
// still reaches this node's subscribers, with a local id.
func (s *sharedStream) publish(h *hub, typ EventType, turnID string, data []byte, floor int64) int64 {
	if floor == 0 {
		floor = h.lastID() + 1
	}
	ev := store.StreamEvent{SessionID: h.sessionID, Type: string(typ), TurnID: turnID, Data: data}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err := s.cl.AppendStreamEvent(ctx, &ev, floor)
	cancel()
	if err == nil {
		if !h.receiveNext(ev.Prev, Event{ID: ev.ID, Type: typ, TurnID: turnID, Data: data}) {
			s.kick(h.sessionID) // another node's events came in between: read them
		}
		return ev.ID
	}
	s.log.Warn("could not store an event for the other nodes; delivering it here only", "session", h.sessionID, "type", typ, "error", err)
	h.mu.Lock()
	defer h.mu.Unlock()
	id := max(floor, h.seq<<seqShift|h.k+1)
	h.seq, h.k = id>>seqShift, id&kMax
	h.deliver(Event{ID: id, Type: typ, TurnID: turnID, Data: data})
	return id
}

// relay delivers stored events to this node's hubs: on a notification,
// after a local publish, and on every sweep.
type relay struct {
	g       *Gateway
	mu      sync.Mutex
	pending map[string]struct{}
	wake    chan struct{}
}

func (r *relay) kick(sessionID string) {
	r.mu.Lock()
	r.pending[sessionID] = struct{}{}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *relay) kickAll() {
	for id := range r.g.hubs.all() {
		r.kick(id)
	}
}

// pop takes one pending session; more says others are left.
func (r *relay) pop() (id string, ok, more bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id = range r.pending {
		delete(r.pending, id)
		return id, true, len(r.pending) > 0
	}
	return "", false, false
}

func (r *relay) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		for {
			id, ok, more := r.pop()
			if !ok {
				break
			}
			if more {
				select { // let another relay worker share the work
				case r.wake <- struct{}{}:
				default:
				}
			}
			r.fetch(ctx, id)
		}
	}
}

// fetch delivers a session's stored events this node has not delivered.
func (r *relay) fetch(ctx context.Context, sessionID string) {
	h := r.g.hubs.lookup(sessionID)
	if h == nil || h.subscribers() == 0 {
		return // nobody here listens; a new subscriber kicks a fetch
	}
	h.fetchMu.Lock()
	defer h.fetchMu.Unlock()
	for {
		stored, err := r.g.cluster.StreamEvents(ctx, sessionID, h.lastID(), fetchBatch)
		if err != nil {
			if ctx.Err() == nil {
				r.g.log.Warn("reading stored events", "session", sessionID, "error", err)
			}
			return
		}
		evs := make([]Event, len(stored))
		for i, s := range stored {
			evs[i] = Event{ID: s.ID, Type: EventType(s.Type), TurnID: s.TurnID, Data: s.Data}
		}
		h.receive(evs)
		if len(stored) < fetchBatch {
			return
		}
	}
}

// forgetRemote drops the references to turns queued here whose messages
// have left the queue without running here: another node ran them. Only
// references older than a sweep are considered, so one queued after the
// queue was read is not dropped.
func (g *Gateway) forgetRemote(ctx context.Context) {
	g.mu.Lock()
	waiting := 0
	for _, ref := range g.turns {
		if ref.run == nil {
			waiting++
		}
	}
	g.mu.Unlock()
	if waiting == 0 {
		return
	}
	cutoff := g.cfg.Now()
	list, err := g.store.Queued(ctx, "")
	if err != nil {
		return
	}
	present := make(map[int64]bool, len(list))
	for _, q := range list {
		present[q.ID] = true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, ref := range g.turns {
		if ref.run == nil && !present[ref.queueID] && ref.queued.Before(cutoff.Add(-g.cfg.Sweep)) {
			if ref.unqueue != nil {
				ref.unqueue()
			}
			delete(g.turns, id)
		}
	}
}

// startCluster starts the listener, the relay workers and the sweep.
func (g *Gateway) startCluster() {
	ctx, cancel := context.WithCancel(context.Background())
	g.stopCluster = cancel
	const relayWorkers = 4
	for range relayWorkers {
		g.bg.Go(func() { g.relay.run(ctx) })
	}
	g.bg.Go(func() { g.listen(ctx) })
	sctx, scancel := context.WithCancel(ctx)
	done := make(chan struct{})
	g.stopSweep = func() {
		scancel()
		<-done
	}
	go func() {
		defer close(done)
		g.sweepLoop(sctx)
	}()
}

// listen keeps a LISTEN connection, reconnecting after failures; after
// each (re)connect every hub catches up.
func (g *Gateway) listen(ctx context.Context) {
	for {
		err := g.cluster.WatchStreamEvents(ctx, func(sessionID string) {
			if sessionID == "" {
				g.relay.kickAll()
				return
			}
			g.relay.kick(sessionID)
		})
		if ctx.Err() != nil {
			return
		}
		g.log.Warn("event notifications stopped; reconnecting", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// sweepLoop runs sweep every cfg.Sweep, and prunes old stored events.
func (g *Gateway) sweepLoop(ctx context.Context) {
	tick := time.NewTicker(g.cfg.Sweep)
	defer tick.Stop()
	lastPrune := g.cfg.Now()
	for {
		g.sweep(ctx)
		if now := g.cfg.Now(); now.Sub(lastPrune) > time.Minute {
			lastPrune = now
			if _, err := g.cluster.PruneStreamEvents(ctx, now.Add(-g.cfg.EventRetention)); err != nil && ctx.Err() == nil {
				g.log.Warn("pruning stored events", "error", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sweep starts a worker for every session with queued messages and no live
// lease (a dead node's, or one queued here while another node ran a turn),
// and catches every hub up in case a notification was missed.
func (g *Gateway) sweep(ctx context.Context) {
	if g.draining.Load() {
		return
	}
	ids, err := g.cluster.ClaimableSessions(ctx)
	if err != nil {
		if ctx.Err() == nil {
			g.log.Warn("looking for queued messages nobody runs", "error", err)
		}
		return
	}
	for _, id := range ids {
		st := g.state(id)
		st.mu.Lock()
		g.startWorker(st)
		st.mu.Unlock()
	}
	g.relay.kickAll()
	g.forgetRemote(ctx)
}

// claim takes the session's next queued message with its lease. A message
// a dead node had started is continued here when its turn stored rows
// (handoff set; see takeOver), marked cut off when it may not be, or run
// now when it never got that far. false: nothing to run here now.
func (g *Gateway) claim(st *sessionState) (store.Claim, *turn.Handoff, bool) {
	for !g.draining.Load() {
		c, ok, err := g.cluster.ClaimQueued(g.turnCtx, st.id, g.cfg.Holder, g.cfg.LeaseTTL, settle)
		if err != nil {
			g.log.Error("claiming the session's next message", "session", st.id, "error", err)
			return store.Claim{}, nil, false
		}
		if !ok {
			return store.Claim{}, nil, false
		}
		if !c.Orphan {
			return c, nil, true
		}
		ran, err := g.turnStored(g.turnCtx, c.Message)
		if err == nil && !ran {
			g.log.Warn("running a message whose node stopped before its turn began", "session", st.id, "turn", c.Message.TurnID)
			return c, nil, true
		}
		var co cutOff
		if err == nil {
			principal := st.principal
			if s, gerr := g.store.GetSession(g.turnCtx, st.id); gerr == nil {
				principal = s.Principal
			}
			co, err = g.takeOver(g.turnCtx, c.Message, principal, "its lease expired")
		}
		if err == nil && co.handoff != nil {
			return c, co.handoff, true // the turn goes on here, under the claim's lease
		}
		if err == nil {
			// Its node died before saying how the turn ended: say it, so
			// every stream that saw it start sees it end.
			if h, herr := g.hubs.get(g.turnCtx, st.id); herr == nil {
				h.publish(api.EventTurnFinished, c.Message.TurnID, map[string]any{"result": co.res})
			}
		}
		g.release(c.Lease)
		if err != nil {
			g.log.Error("deciding a dead node's turn", "session", st.id, "error", err)
			return store.Claim{}, nil, false
		}
	}
	return store.Claim{}, nil, false
}

// release gives up a claim's lease (a no-op once the turn re-acquired it).
func (g *Gateway) release(l store.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.store.ReleaseLease(ctx, l); err != nil {
		g.log.Warn("releasing a claim's lease", "session", l.SessionID, "error", err)
	}
}
