package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// turnRun is a turn that is running.
type turnRun struct {
	id        string
	sessionID string
	principal string // whose turn slot it holds
	ctx       context.Context
	cancel    context.CancelCauseFunc
	done      chan struct{}
	// claim is the lease a cluster node claimed the message with (the
	// turn re-acquires it; released at the end in case it did not).
	claim store.Lease

	// steer takes messages posted with busy: steer while the turn runs.
	steer *turn.Steering
	// handoff is set when the turn continues one whose node died.
	handoff *turn.Handoff

	mu        sync.Mutex
	approvals map[string]chan api.ApprovalAnswer
}

// errInterrupted is the cause of an interrupt over the API.
var errInterrupted = errors.New("interrupted over the API")

// submitted says what happened to a posted message.
type submitted struct {
	TurnID    string `json:"turn_id"`
	SessionID string `json:"session_id"`
	// Position is how many messages are ahead of it (0: it runs now).
	Position int `json:"position"`
	// Steering is the running turn it was handed to (busy: steer): it
	// joins that turn after its current tool round (event turn_steered),
	// or, arriving after the turn's last call, runs as the next turn.
	Steering string `json:"steering,omitempty"`
}

// submit queues a message for a session durably and makes sure a worker
// runs the session's queue.
func (g *Gateway) submit(ctx context.Context, sess *store.Session, principal, text, mode string) (submitted, error) {
	if mode == "" {
		mode = g.cfg.Busy
	}
	if g.draining.Load() {
		return submitted{}, errf(http.StatusServiceUnavailable, api.CodeShuttingDown, "the server is shutting down; send the message again to another node or after the restart")
	}
	st := g.state(sess.ID)
	st.mu.Lock()
	defer st.mu.Unlock()
	pending := st.pending
	if g.cluster != nil {
		// The queue is shared: count what every node has queued, the
		// message of a turn running anywhere included.
		list, err := g.store.Queued(ctx, sess.ID)
		if err != nil {
			return submitted{}, err
		}
		pending = len(list)
		if st.running != nil && pending > 0 {
			pending--
		}
	}
	busy := st.running != nil || pending > 0
	if busy {
		switch mode {
		case BusyReject:
			return submitted{}, errf(http.StatusConflict, api.CodeSessionBusy, "the session is busy with another turn; try again when it ends (busy: reject)")
		case BusyInterrupt:
			if st.running != nil {
				st.running.cancel(errors.New("interrupted by a newer message (busy: interrupt)"))
			}
		}
	}
	if pending >= g.cfg.QueueLimit {
		return submitted{}, errf(http.StatusTooManyRequests, api.CodeQueueFull, fmt.Sprintf("the session already has %d queued messages", pending))
	}
	unqueue, err := g.hold(principal, "queued")
	if err != nil {
		return submitted{}, err
	}
	turnID := agent.NewTurnID()
	q := &store.QueuedMessage{SessionID: sess.ID, TurnID: turnID, Text: text}
	if err := g.store.Enqueue(ctx, q); err != nil {
		unqueue()
		return submitted{}, err
	}
	st.principal = sess.Principal
	pos := pending
	if st.running != nil {
		pos++
	}
	if g.cluster == nil {
		st.pending++
		g.m.queuedMessages(1)
	}
	g.mu.Lock()
	g.turns[turnID] = &turnRef{sessionID: sess.ID, principal: principal, queueID: q.ID, text: text, queued: g.cfg.Now(), unqueue: unqueue}
	g.mu.Unlock()
	if h, err := g.hubs.get(ctx, sess.ID); err == nil {
		h.publish(api.EventTurnQueued, turnID, map[string]any{"position": pos, "text": text})
	}
	sub := submitted{TurnID: turnID, SessionID: sess.ID, Position: pos}
	// Steering: the message stays queued (durable) until it joins the
	// running turn, which then takes it off the queue (steered); one the
	// turn never took runs from the queue as the next turn. A cluster
	// node may not run the session's turn itself: there it is queued.
	if mode == BusySteer && g.cluster == nil && st.running != nil && st.running.steer != nil &&
		st.running.steer.Send(turn.SteerMessage{ID: turnID, Text: text}) {
		sub.Steering = st.running.id
	}
	g.startWorker(st)
	return sub, nil
}

// startWorker starts the session's queue worker unless one runs; st.mu held.
func (g *Gateway) startWorker(st *sessionState) {
	if st.worker {
		return
	}
	st.worker = true
	g.workers.Add(1)
	go g.work(st)
}

// work runs a session's queued messages one after another, oldest first.
func (g *Gateway) work(st *sessionState) {
	defer g.workers.Done()
	for {
		q, ok := g.next(st)
		if !ok {
			return
		}
		g.runQueued(st, q)
	}
}

// next takes the session's oldest queued message and marks it started, or
// ends the worker when there is none (or the server is draining).
func (g *Gateway) next(st *sessionState) (store.QueuedMessage, bool) {
	// Wait for a turn slot first, outside the session lock: the
	// principal's, which never waits for another principal's.
	principal := g.sessionPrincipal(st)
	if !g.sched.acquire(principal, g.stopping) {
		st.mu.Lock()
		st.worker = false
		st.mu.Unlock()
		return store.QueuedMessage{}, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var (
		q       store.QueuedMessage
		claim   store.Lease
		handoff *turn.Handoff
	)
	if g.cluster != nil {
		c, h, ok := g.claim(st)
		if !ok {
			st.worker = false
			g.sched.release(principal)
			return store.QueuedMessage{}, false
		}
		q, claim, handoff = c.Message, c.Lease, h
	} else {
		var list []store.QueuedMessage
		var err error
		if !g.draining.Load() {
			list, err = g.store.Queued(g.turnCtx, st.id)
		}
		if err != nil || len(list) == 0 {
			if err != nil {
				g.log.Error("reading the session's queue", "session", st.id, "error", err)
			}
			st.worker = false
			g.sched.release(principal)
			return store.QueuedMessage{}, false
		}
		q = list[0]
		if !q.StartedAt.IsZero() {
			// This message's turn started before: it ended here but could
			// not leave the queue (a failed write, e.g. a full disk), or it
			// was cut off. It never runs twice: with its user row stored it
			// is marked cut off, as at a restart.
			run, h, err := g.settleStarted(st, q)
			handoff = h
			if err != nil {
				g.log.Error("settling a queued message whose turn already started", "session", st.id, "turn", q.TurnID, "error", err)
				st.worker = false
				g.sched.release(principal)
				return store.QueuedMessage{}, false
			}
			if !run {
				g.sched.release(principal)
				return g.nextAgain(st)
			}
		}
		if err := g.store.MarkStarted(g.turnCtx, q.ID, g.cfg.Now()); err != nil {
			g.log.Error("marking a queued message started", "session", st.id, "error", err)
			st.worker = false
			g.sched.release(principal)
			return store.QueuedMessage{}, false
		}
	}
	run := &turnRun{id: q.TurnID, sessionID: st.id, principal: principal, claim: claim, done: make(chan struct{}), approvals: map[string]chan api.ApprovalAnswer{},
		steer: turn.NewSteering(), handoff: handoff}
	run.ctx, run.cancel = context.WithCancelCause(context.WithValue(context.WithValue(g.turnCtx, runKey{}, run), turnPrincipalKey{}, principal))
	st.running = run
	if st.pending > 0 {
		st.pending--
		g.m.queuedMessages(-1)
	}
	g.mu.Lock()
	if ref, ok := g.turns[q.TurnID]; ok {
		ref.run = run
		if ref.unqueue != nil {
			ref.unqueue()
		}
	} else {
		g.turns[q.TurnID] = &turnRef{sessionID: st.id, queueID: q.ID, text: q.Text, run: run}
	}
	g.mu.Unlock()
	return q, true
}

// nextAgain is next after the head was settled; the caller holds st.mu,
// which next takes itself.
func (g *Gateway) nextAgain(st *sessionState) (store.QueuedMessage, bool) {
	st.mu.Unlock()
	defer st.mu.Lock()
	return g.next(st)
}

// settleStarted decides a started message at the head of the queue: a
// turn that ended in this process only needs its dequeue retried; one the
// previous process was running when it stopped (its user row stored) is
// continued (handoff set) as Start decided, or else marked cut off and
// dequeued; one that stored nothing may run (run is true).
func (g *Gateway) settleStarted(st *sessionState, q store.QueuedMessage) (run bool, handoff *turn.Handoff, err error) {
	if st.ended[q.ID] {
		if err := g.store.Dequeue(g.turnCtx, q.ID); err != nil {
			return false, nil, err
		}
		delete(st.ended, q.ID)
		return false, nil, nil
	}
	g.mu.Lock()
	h := g.resumes[q.ID]
	delete(g.resumes, q.ID)
	g.mu.Unlock()
	if h != nil {
		return true, h, nil
	}
	stored, err := g.turnStored(g.turnCtx, q)
	if err != nil || !stored {
		return err == nil, nil, err
	}
	return false, nil, g.markCutOff(g.turnCtx, q, cutOffText)
}

// sessionPrincipal returns the session's principal, read from the store
// once when the state does not know it yet ("" when it cannot be read:
// the turn then fails on the same read).
func (g *Gateway) sessionPrincipal(st *sessionState) string {
	st.mu.Lock()
	p := st.principal
	st.mu.Unlock()
	if p != "" {
		return p
	}
	if s, err := g.store.GetSession(g.turnCtx, st.id); err == nil {
		p = s.Principal
		st.mu.Lock()
		st.principal = p
		st.mu.Unlock()
	}
	return p
}

type runKey struct{}

func runFrom(ctx context.Context) *turnRun {
	r, _ := ctx.Value(runKey{}).(*turnRun)
	return r
}

// runQueued runs one turn for a queued message and removes it from the
// queue when the turn has ended.
func (g *Gateway) runQueued(st *sessionState, q store.QueuedMessage) {
	st.mu.Lock()
	run := st.running
	st.mu.Unlock()
	ctx := run.ctx
	defer run.cancel(nil)

	h, herr := g.hubs.get(ctx, st.id)
	publish := func(typ EventType, fields map[string]any) {
		if herr == nil {
			h.publish(typ, q.TurnID, fields)
		}
	}
	g.m.turnsRunning(1)
	g.m.principalUsage(run.principal, "turns", 1)
	if run.handoff == nil {
		publish(api.EventTurnStarted, map[string]any{"text": q.Text, "session_id": st.id})
	}

	publishData := func(typ EventType, data []byte) {
		if herr == nil {
			h.publishData(typ, q.TurnID, data)
		}
	}
	res, err := g.runTurn(ctx, st.id, q, publish, publishData)
	// What never joined stays in the queue: the worker runs it next.
	run.steer.Close()
	if err != nil && res.Exit == "" {
		res.Exit = turn.ExitFailed
	}
	g.m.turnsRunning(-1)
	g.m.principalUsage(run.principal, "turns", -1)

	if g.cluster != nil {
		// Before the message leaves the queue: the next turn, on whichever
		// node claims it, starts after this event.
		publish(api.EventTurnFinished, map[string]any{"result": res})
	}
	// The turn is over: its message leaves the queue.
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := g.store.Dequeue(dctx, q.ID); err != nil {
		g.log.Error("removing a finished turn's message from the queue", "session", st.id, "turn", q.TurnID, "error", err)
		if g.cluster == nil {
			// next retries the dequeue instead of running it again.
			st.mu.Lock()
			st.ended[q.ID] = true
			st.mu.Unlock()
		}
	}
	dcancel()
	if g.cluster != nil {
		g.release(run.claim)
	}
	st.mu.Lock()
	st.running = nil
	st.mu.Unlock()
	g.mu.Lock()
	delete(g.turns, q.TurnID)
	g.mu.Unlock()
	g.sched.release(run.principal)
	if g.cluster == nil {
		publish(api.EventTurnFinished, map[string]any{"result": res})
	}
	if herr == nil {
		h.trim()
	}
	close(run.done)
}

// runTurn runs the turn on the session's agent with hooks that publish.
func (g *Gateway) runTurn(ctx context.Context, sessionID string, q store.QueuedMessage, publish func(EventType, map[string]any),
	publishData func(EventType, []byte)) (turn.Result, error) {
	sess, err := g.store.GetSession(ctx, sessionID)
	if err != nil {
		return g.failedEarly(ctx, q, failedResult(sessionID, q.TurnID, turn.ExitSessionFailed, "Could not load the session: "+err.Error())), err
	}
	// A session stored without a provider or model (made before either was
	// recorded, or by another writer) runs on the server's default route:
	// the allow-list is asked about that route, not about "/".
	provider, model := sess.Provider, sess.Model
	if provider == "" || model == "" {
		if p, m, err := g.resolveModel(provider, model); err == nil {
			provider, model = p, m
		}
	}
	if sess.Principal != "" && !g.modelAllowed(sess.Principal, provider, model) {
		err := errf(http.StatusBadRequest, api.CodeModelNotAllowed, "model "+sess.Provider+"/"+sess.Model+" is not available to this principal")
		return g.failedEarly(ctx, q, failedResult(sessionID, q.TurnID, turn.ExitConfigurationFailed, "This session's model is no longer allowed for its principal (serve.limits models); start a new session.")), err
	}
	a, err := g.agentFor(sess.Principal, sess.Cwd, sess.Provider, sess.Model)
	if err != nil {
		return g.failedEarly(ctx, q, failedResult(sessionID, q.TurnID, turn.ExitConfigurationFailed, "This session's provider, model or workspace is not available on this server: "+err.Error())), err
	}
	hooks := turn.Hooks{Sink: func(u turn.Update) {
		switch u := u.(type) {
		case turn.Steered:
			g.steered(sessionID, q.TurnID, u, publish)
		case turn.Finished:
			// runQueued publishes the result once the message left the queue.
		default:
			if typ, data, ok := updateEvent(q.TurnID, u); ok {
				publishData(typ, data)
			}
		}
	}}
	var steer *turn.Steering
	if run := runFrom(ctx); run != nil {
		steer = run.steer
	}
	in := agent.Input{Text: q.Text, TurnID: q.TurnID, Hooks: hooks, Unattended: true, Steer: steer}
	if run := runFrom(ctx); run != nil && run.handoff != nil {
		in.Resume, in.Handoff = true, run.handoff
	}
	return a.RunTurn(ctx, sessionID, in)
}

// steered takes a message that joined the running turn off the queue: its
// row is in the transcript, so it must not run as a turn of its own.
func (g *Gateway) steered(sessionID, into string, m turn.Steered, publish func(EventType, map[string]any)) {
	g.mu.Lock()
	ref, ok := g.turns[m.ID]
	delete(g.turns, m.ID)
	g.mu.Unlock()
	if ok {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(g.turnCtx), 10*time.Second)
		if err := g.store.Dequeue(dctx, ref.queueID); err != nil {
			g.log.Error("removing a steered message from the queue", "session", sessionID, "turn", m.ID, "error", err)
		}
		cancel()
		st := g.state(sessionID)
		st.mu.Lock()
		if st.pending > 0 {
			st.pending--
			g.m.queuedMessages(-1)
		}
		st.mu.Unlock()
	}
	publish(api.EventTurnSteered, map[string]any{"steered_turn_id": m.ID, "text": m.Text, "into": into})
}

// failedEarly reports a turn that failed before an engine ran it to the
// same observers engine turns report to, so /metrics and traces count it
// (talaria_turns_total{exit="configuration_failed"}) like any other failed turn.
func (g *Gateway) failedEarly(ctx context.Context, q store.QueuedMessage, res turn.Result) turn.Result {
	obs := turn.MultiObserver(g.cfg.Observer, g.m.observer)
	if obs == nil {
		return res
	}
	t := obs.StartTurn(ctx, turn.TurnInfo{SessionID: res.SessionID, TurnID: res.TurnID, Unattended: true,
		Message: &llm.Message{Role: llm.RoleUser, Content: []llm.Part{llm.TextPart(q.Text)}}, Start: time.Now()})
	t.End(&res)
	return res
}

func failedResult(sessionID, turnID string, x turn.Exit, msg string) turn.Result {
	res := turn.Result{SessionID: sessionID, TurnID: turnID, Explanation: msg}
	res.Fail(x, &turn.Failure{Message: msg})
	return res
}

// interrupt stops a running turn, or drops a queued one (its text is kept
// as an unsent, display-only row).
func (g *Gateway) interrupt(ctx context.Context, turnID, principal string) (string, error) {
	g.mu.Lock()
	r, ok := g.turns[turnID]
	var ref turnRef
	if ok {
		ref = *r
	}
	g.mu.Unlock()
	if !ok || ref.principal != "" && ref.principal != principal {
		return "", errf(http.StatusNotFound, api.CodeNotFound, "no running or queued turn "+turnID)
	}
	if ref.principal == "" {
		sess, err := g.store.GetSession(ctx, ref.sessionID)
		if err != nil || sess.Principal != principal {
			return "", errf(http.StatusNotFound, api.CodeNotFound, "no running or queued turn "+turnID)
		}
	}
	st := g.state(ref.sessionID)
	st.mu.Lock()
	if run := st.running; run != nil && run.id == turnID {
		st.mu.Unlock()
		run.cancel(errInterrupted)
		return "interrupting", nil
	}
	defer st.mu.Unlock()
	if g.cluster != nil {
		// Queued here, but another node may have claimed it.
		list, err := g.store.Queued(ctx, ref.sessionID)
		if err != nil {
			return "", err
		}
		for _, q := range list {
			if q.ID == ref.queueID && !q.StartedAt.IsZero() {
				return "", errf(http.StatusConflict, api.CodeSessionBusy, "turn "+turnID+" runs on another node; send the interrupt to that node")
			}
		}
	}
	// Still queued: the worker takes the head under st.mu, so it cannot
	// start it now.
	if err := g.store.Dequeue(ctx, ref.queueID); err != nil {
		return "", err
	}
	if st.pending > 0 {
		st.pending--
		g.m.queuedMessages(-1)
	}
	g.mu.Lock()
	delete(g.turns, turnID)
	g.mu.Unlock()
	if ref.unqueue != nil {
		ref.unqueue()
	}
	// No row is written for it: the session may be inside another turn's
	// tool round. The client has its text; the result repeats it.
	if h, err := g.hubs.get(ctx, ref.sessionID); err == nil {
		res := turn.Result{SessionID: ref.sessionID, TurnID: turnID, Exit: turn.ExitInterrupted,
			Explanation: "Cancelled before it started; the message was not sent: " + ref.text}
		h.publish(api.EventTurnFinished, turnID, map[string]any{"result": res})
	}
	return "cancelled", nil
}
