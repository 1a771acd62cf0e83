package agent

import (
	"context"
	"errors"
	"sync"

	"github.com/talaria-agent/talaria/internal/ctxkey"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// ErrInterrupted is the cancellation cause of a turn stopped by Interrupt.
var ErrInterrupted = errors.New("interrupted")

// errForegroundTurn is the cancellation cause of a review that yielded to
// a new turn on its session.
var errForegroundTurn = errors.New("a foreground turn started on the session")

// activeTurn is what a running turn tells the tools it calls (delegate,
// memory) about itself, through its context.
type activeTurn struct {
	session *store.Session
	turnID  string
	depth   int            // 0: a user's turn; 1: a subagent's; ...
	tools   *tool.Registry // the tools this turn's engine offers
	hooks   turn.Hooks
	// source is the session memory entries written in this turn are
	// attributed to (a review's parent, else the session itself).
	source string
	// principal owns the turn's top-level session (the gateway's tenant;
	// "" for the CLI): memory is scoped to it, children and reviews too.
	principal string
	// budget is the iteration budget of the user's turn, shared by every
	// child it runs (nil: the turn's own limit only).
	budget *turn.IterationBudget

	mu     sync.Mutex
	totals turn.SubagentTotals
	sem    chan struct{} // bounds this turn's running children
}

// slots returns the turn's child slots, made on first use.
func (at *activeTurn) slots(n int) chan struct{} {
	at.mu.Lock()
	defer at.mu.Unlock()
	if at.sem == nil {
		at.sem = make(chan struct{}, n)
	}
	return at.sem
}

// turnKey carries the running turn to the subagents and reviews it starts.
var turnKey = ctxkey.New[*activeTurn]("agent turn")

// TurnPrincipal is the principal owning the turn ctx belongs to (the
// top-level session's, for subagents and background reviews too): what
// Config.Allow and observers charge a call to. ok is false outside a turn.
func TurnPrincipal(ctx context.Context) (principal string, ok bool) {
	at := turnKey.From(ctx)
	if at == nil {
		return "", false
	}
	return at.principal, true
}

// addChild adds a finished child's spend (its own children included).
func (at *activeTurn) addChild(res turn.Result) {
	at.mu.Lock()
	defer at.mu.Unlock()
	at.totals.Count++
	at.totals.Usage.Add(res.Usage)
	at.totals.CostUSD += res.CostUSD
	at.totals.APICalls += res.APICalls
	if s := res.Subagents; s != nil {
		at.totals.Count += s.Count
		at.totals.Usage.Add(s.Usage)
		at.totals.CostUSD += s.CostUSD
		at.totals.APICalls += s.APICalls
	}
}

// subagentTotals is nil when the turn ran no child.
func (at *activeTurn) subagentTotals() *turn.SubagentTotals {
	at.mu.Lock()
	defer at.mu.Unlock()
	if at.totals.Count == 0 {
		return nil
	}
	t := at.totals
	return &t
}

// registry tracks, per session, the cancel functions of its running turns
// and of its background review (scheduled or running). Entries are removed
// by the function their add returned, which every exit path calls.
type registry struct {
	mu      sync.Mutex
	turns   map[string]map[int]context.CancelCauseFunc
	reviews map[string]*reviewRun
	next    int
}

func newRegistry() *registry {
	return &registry{turns: map[string]map[int]context.CancelCauseFunc{}, reviews: map[string]*reviewRun{}}
}

func (r *registry) addTurn(sessionID string, cancel context.CancelCauseFunc) (unregister func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	id := r.next
	if r.turns[sessionID] == nil {
		r.turns[sessionID] = map[int]context.CancelCauseFunc{}
	}
	r.turns[sessionID][id] = cancel
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.turns[sessionID], id)
		if len(r.turns[sessionID]) == 0 {
			delete(r.turns, sessionID)
		}
	}
}

// running reports whether a turn of sessionID runs in this process.
func (r *registry) running(sessionID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.turns[sessionID]) > 0
}

// setReview registers rv as the session's review, cancelling any earlier
// one; it returns the function that removes rv (and only rv).
func (r *registry) setReview(sessionID string, rv *reviewRun) (unregister func()) {
	r.mu.Lock()
	old := r.reviews[sessionID]
	r.reviews[sessionID] = rv
	r.mu.Unlock()
	if old != nil {
		old.cancel(errForegroundTurn)
	}
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.reviews[sessionID] == rv {
			delete(r.reviews, sessionID)
		}
	}
}

// cancelReview cancels the session's scheduled or running review without
// waiting for it.
func (r *registry) cancelReview(sessionID string) bool {
	r.mu.Lock()
	rv := r.reviews[sessionID]
	delete(r.reviews, sessionID)
	r.mu.Unlock()
	if rv == nil {
		return false
	}
	rv.cancel(errForegroundTurn)
	return true
}

// Interrupt stops every turn of the session running in this process, the
// children they run, and the session's background review. It does not
// wait; each turn still finalizes and returns its result (interrupted). It
// reports whether there was anything to stop.
func (a *Agent) Interrupt(sessionID string) bool {
	a.kids.mu.Lock()
	var cancels []context.CancelCauseFunc
	for _, c := range a.kids.turns[sessionID] {
		cancels = append(cancels, c)
	}
	a.kids.mu.Unlock()
	for _, c := range cancels {
		c(ErrInterrupted)
	}
	rv := a.kids.cancelReview(sessionID)
	return len(cancels) > 0 || rv
}
