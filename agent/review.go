package agent

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/talaria-agent/talaria/internal/setting"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// ReviewConfig configures the background review: after a turn completes
// and the session has been idle for Idle, a review turn reads the
// session's stored transcript and keeps durable facts in memory.
type ReviewConfig struct {
	Enabled bool
	// Idle is how long the session must stay idle after a turn before the
	// review starts (default 2s).
	Idle time.Duration
	// MaxIterations bounds the review's model calls (default 4).
	MaxIterations int
	// OnEvent, when set, is told each step of every review (from the
	// review's goroutine or, for "cancelled", the caller's).
	OnEvent func(ReviewEvent)
}

func (c ReviewConfig) withDefaults() ReviewConfig {
	c.Idle = setting.Or(c.Idle, 2*time.Second)
	c.MaxIterations = setting.Or(c.MaxIterations, 4)
	return c
}

// Review phases (ReviewEvent.Phase).
const (
	ReviewScheduled = "scheduled" // a turn completed; waiting for idle
	ReviewStarted   = "started"   // the review session exists; its turn runs
	ReviewCancelled = "cancelled" // a foreground turn or Interrupt asked it to stop
	ReviewFinished  = "finished"  // it ended (see Exit); always the last event
)

// ReviewEvent is one step of a background review.
type ReviewEvent struct {
	Phase           string
	SessionID       string // the reviewed session
	ReviewSessionID string // set from "started" on
	// Set on "finished": the review turn's exit (interrupted when it
	// yielded to a foreground turn; "" when it never started), its spend
	// and the memory entries it added.
	Exit     turn.Exit
	Usage    llm.Usage
	CostUSD  float64
	APICalls int
	Added    int
	At       time.Time
}

// ReviewInstruction is the fixed request of a review turn.
const ReviewInstruction = `[Background review — not from the user.] Review the conversation above and keep what will still matter in later sessions in this workspace: the user's stated preferences, the project's conventions, decisions taken (with the reason). Use the memory tool: "list" first, then "add" one short, self-contained fact per entry, and "remove" entries this conversation proved wrong. Skip anything already in memory, anything temporary, and secrets. Other tools are not available. When done, reply with one line saying how many entries you added.`

// reviewRun is a scheduled or running review; cancel makes it yield.
type reviewRun struct {
	cancel context.CancelCauseFunc
	emit   func(ReviewEvent)
	sid    string
}

// afterTurn schedules a review of the turn's session once it is idle.
func (a *Agent) afterTurn(res turn.Result) {
	if !a.cfg.Review.Enabled || res.Exit != turn.ExitCompleted {
		return
	}
	// Add to bg under bgMu, so Close's Wait never races a new review.
	a.bgMu.Lock()
	if a.closed {
		a.bgMu.Unlock()
		return
	}
	a.bg.Add(1)
	a.bgMu.Unlock()
	sid := res.SessionID
	ctx, cancel := context.WithCancelCause(a.life)
	rv := &reviewRun{sid: sid, emit: a.emitReview}
	rv.cancel = func(cause error) {
		if ctx.Err() == nil {
			a.emitReview(ReviewEvent{Phase: ReviewCancelled, SessionID: sid})
		}
		cancel(cause)
	}
	unregister := a.kids.setReview(sid, rv)
	a.emitReview(ReviewEvent{Phase: ReviewScheduled, SessionID: sid})
	go func() {
		defer a.bg.Done()
		defer cancel(nil)
		defer unregister()
		a.review(ctx, sid)
	}()
}

func (a *Agent) emitReview(ev ReviewEvent) {
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	if f := a.cfg.Review.OnEvent; f != nil {
		f(ev)
	}
}

// review waits for the session to stay idle, then runs the review turn in
// a child session of kind review. Every exit emits "finished".
func (a *Agent) review(ctx context.Context, sid string) {
	done := ReviewEvent{Phase: ReviewFinished, SessionID: sid}
	defer func() { a.emitReview(done) }()
	t := time.NewTimer(a.cfg.Review.Idle)
	select {
	case <-ctx.Done():
		t.Stop()
		return
	case <-t.C:
	}
	if a.kids.running(sid) {
		return // a turn started meanwhile (it cancels us too)
	}
	parent, err := a.cfg.Store.GetSession(ctx, sid)
	if err != nil || !parent.Live() {
		return
	}
	// The parent's stored rows, replayed as they were sent: with the same
	// system prompt and tool definitions the request starts with the exact
	// bytes of the session's last request, so the provider's cache hits.
	prefix, err := a.cfg.Store.Messages(ctx, sid, store.MessageQuery{})
	if err != nil || len(prefix) == 0 {
		return
	}
	tools, err := a.reviewTools()
	if err != nil {
		a.log.Warn("review: tools", "error", err)
		return
	}
	tc := a.engine.Config()
	tc.Tools = tools
	tc.Compressor = nil // a review never rewrites anything
	tc.Approver = nil
	tc.Limits.MaxIterations = a.cfg.Review.MaxIterations
	eng, err := turn.New(tc)
	if err != nil {
		return
	}
	before := a.memoryCount(ctx, parent.Principal)
	rs, err := a.newChildSession(ctx, sid, store.SessionReview, "review of "+sid, parent.SystemPrompt)
	if err != nil {
		a.log.Warn("review: could not create its session", "session", sid, "error", err)
		return
	}
	done.ReviewSessionID = rs.ID
	a.emitReview(ReviewEvent{Phase: ReviewStarted, SessionID: sid, ReviewSessionID: rs.ID})
	in := Input{Text: ReviewInstruction, Unattended: true, prefix: prefix}
	msg := userMessage(in)
	turnID := newTurnID(a.now())
	var res turn.Result
	if _, lease, user, early, _ := a.admit(ctx, rs, msg, turnID); early != nil {
		res = *early
	} else {
		at := &activeTurn{session: rs, turnID: turnID, depth: a.cfg.Subagents.MaxDepth, tools: tools, source: sid, principal: parent.Principal}
		res = a.runAdmitted(ctx, eng, rs, lease, turnID, user, in, at)
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseReleaseTimeout)
	defer cancel()
	if err := a.cfg.Store.EndSession(dctx, rs.ID, endReason(res.Exit)); err != nil {
		a.log.Warn("could not end the review session", "session", rs.ID, "error", err)
	}
	done.Exit, done.Usage, done.CostUSD, done.APICalls = res.Exit, res.Usage, res.CostUSD, res.APICalls
	done.Added = max(a.memoryCount(dctx, parent.Principal)-before, 0)
}

func (a *Agent) memoryCount(ctx context.Context, principal string) int {
	e, err := a.mem.Memories(ctx, a.memoryQueryFor(principal))
	if err != nil {
		return 0
	}
	return len(e)
}

// reviewTools offers the session's own tool definitions, byte for byte
// (they are part of the cached prefix), but only memory runs; any other
// call is answered that it is not available.
func (a *Agent) reviewTools() (*tool.Registry, error) {
	var tools []tool.Tool
	for _, n := range a.tools.Names() {
		t, _ := a.tools.Get(n)
		if n == MemoryToolName {
			tools = append(tools, t)
			continue
		}
		info, _ := a.tools.Info(n)
		tools = append(tools, &unavailableTool{info: info})
	}
	return tool.NewRegistry(tools...)
}

// unavailableTool keeps a tool's definition and refuses to run it.
type unavailableTool struct{ info tool.Info }

func (u *unavailableTool) Info() tool.Info {
	i := u.info
	i.ReadOnly = true // refusing changes nothing; no approval needed
	return i
}

func (u *unavailableTool) Run(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{}, errors.New(u.info.Name + " is not available during the background review; only memory is")
}

// Close stops the agent's background work — scheduled and running
// reviews — and waits for it. Turns in progress are the callers'.
func (a *Agent) Close() {
	a.bgMu.Lock()
	a.closed = true
	a.bgMu.Unlock()
	a.stop(errors.New("agent closed"))
	a.bg.Wait()
}

// WaitReviews waits until no review is scheduled or running (tests, and a
// CLI that wants the review of its last turn before it exits).
func (a *Agent) WaitReviews() { a.bg.Wait() }
