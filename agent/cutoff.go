package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/transcript"
	"github.com/talaria-agent/talaria/turn"
)

// CutOff says what ResumeCutOff does with a session's last turn when the
// process running it died mid-turn (killed, out of memory, a second
// Ctrl+C): the single-process side of serve's handoff.
type CutOff struct {
	// Interrupt marks the turn interrupted instead of continuing it
	// (handoff: interrupt).
	Interrupt bool
	// Max bounds how often one turn is continued (default 2); at the next
	// death it ends turn.ExitHandoffLimit.
	Max        int
	Hooks      turn.Hooks
	Unattended bool
}

// What ResumeCutOff did with a cut-off turn (CutOffOutcome.Outcome), as
// serve's talaria_turn_handoffs_total{outcome} names it.
const (
	CutOffContinued   = "continued"
	CutOffInterrupted = "interrupted"
	CutOffLimit       = "limit"
)

// CutOffOutcome is a cut-off turn ResumeCutOff found and decided.
type CutOffOutcome struct {
	TurnID  string        `json:"turn_id"`
	Outcome string        `json:"outcome"`           // CutOffContinued, CutOffInterrupted or CutOffLimit
	Handoff *turn.Handoff `json:"handoff,omitempty"` // set when continued
	Result  turn.Result   `json:"result"`
}

// cutOffReason is why a turn continued by ResumeCutOff moved (its
// Handoff.Reason), as serve says "its lease expired".
const cutOffReason = "the process running it stopped"

// HandoffRecord is a "handoff" turn event's detail: the handoff and the
// lease fence the turn went on under (0: not recorded, as serve's are not).
type HandoffRecord struct {
	turn.Handoff
	Fence int64 `json:"fence,omitempty"`
}

// HandoffSeq is where handoff events start in a turn's event log
// (store.TurnEvent.Seq): above any seq a turn's own recorder gives its
// events, so a handoff never collides with them.
const HandoffSeq = 1 << 20

// ResumeCutOff decides the session's last turn when the process that ran
// it died before ending it: it continues the turn from its last durable
// point (Input.Resume) under a fresh lease, as many times as opt.Max
// allows, or marks it cut off (opt.Interrupt, or the bound reached) with a
// row that says so. Each continuation is recorded as a "handoff" turn
// event first, so the bound holds whichever process dies next. nil, nil:
// the last turn ended, none ran, or a live process holds the session's
// lease (the turn is running). The decision is made again once the lease
// is held, so a turn that ended meanwhile is left alone.
func (a *Agent) ResumeCutOff(ctx context.Context, sessionID string, opt CutOff) (*CutOffOutcome, error) {
	sess, err := store.ResolveTip(ctx, a.cfg.Store, sessionID)
	if err != nil {
		return nil, &sessionErr{msg: sessionError(sessionID, err), err: err}
	}
	// Unleased first: most sessions' last turn ended, and taking the
	// lease for nothing would make a concurrent turn wait.
	if id, err := a.cutOffTurn(ctx, sess.ID); err != nil || id == "" {
		return nil, err
	}
	// One try, no wait: a live holder means the turn is running, not cut
	// off (the prompt's turn then waits for it as any turn does); a dead
	// one's lease is taken over at once (acquire).
	lease, err := a.acquire(ctx, sess.ID, nil)
	var held *store.LeaseHeldError
	if errors.As(err, &held) || errors.Is(err, store.ErrEnded) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("take the session over to continue its cut-off turn: %w", err)
	}
	turnID, err := a.cutOffTurn(ctx, sess.ID)
	if err != nil || turnID == "" {
		a.releaseQuietly(ctx, lease)
		return nil, err
	}
	out := &CutOffOutcome{TurnID: turnID}
	n, err := a.handoffs(ctx, sess.ID, turnID)
	if err != nil {
		a.releaseQuietly(ctx, lease)
		return nil, err
	}
	most := cmp.Or(opt.Max, 2)
	_, counted := a.cfg.Store.(store.TurnEvents)
	switch {
	case opt.Interrupt, !counted:
		// A store that keeps no turn events cannot count handoffs, so a
		// continued turn could hop forever: it is cut off instead.
		out.Outcome = CutOffInterrupted
		why := "handoff: interrupt"
		if !counted {
			why = "this store keeps no turn events to bound its handoffs"
		}
		out.Result = turn.Result{SessionID: sess.ID, TurnID: turnID, Exit: turn.ExitInterrupted,
			Explanation: "The process running this turn stopped; everything it stored is kept. It was not continued (" + why + ")."}
	case n >= most:
		out.Outcome = CutOffLimit
		text := fmt.Sprintf("Turn stopped: the process running it died %d times, more than it may be continued (handoff_max %d). "+
			"Everything it stored is kept; a tool or request of this turn may be what kills it. Send a message to go on.", n+1, most)
		out.Result = turn.Result{SessionID: sess.ID, TurnID: turnID, Exit: turn.ExitHandoffLimit, Explanation: text}
	}
	if out.Outcome != "" {
		defer a.releaseQuietly(ctx, lease)
		return out, a.markCutOff(ctx, lease, turnID, "Turn interrupted: "+out.Result.Explanation)
	}
	h := &turn.Handoff{From: a.lastNode(ctx, sess.ID, turnID), To: cmp.Or(a.cfg.Holder, "this process"),
		Reason: cutOffReason, Count: n + 1, Max: most}
	detail, _ := json.Marshal(HandoffRecord{Handoff: *h, Fence: lease.Token})
	ev := store.TurnEvent{SessionID: sess.ID, TurnID: turnID, Seq: HandoffSeq + n + 1, Kind: "handoff", Name: h.To,
		Start: a.now(), Detail: string(detail)}
	if err := a.cfg.Store.(store.TurnEvents).AppendTurnEvents(ctx, ev); err != nil {
		a.releaseQuietly(ctx, lease)
		return nil, fmt.Errorf("record turn %s's handoff: %w", turnID, err)
	}
	out.Outcome, out.Handoff = CutOffContinued, h
	a.log.Warn("continuing a turn whose process stopped", "session", sess.ID, "turn", turnID, "from", h.From, "handoff", h.Count, "max", most)
	in := Input{Hooks: opt.Hooks, Unattended: opt.Unattended, Resume: true, Handoff: h}
	at := &activeTurn{session: sess, turnID: turnID, tools: a.tools, hooks: in.Hooks, source: sess.ID, principal: sess.Principal,
		budget: turn.NewIterationBudget(a.engine.Config().Limits.MaxIterations)}
	out.Result = a.runAdmitted(ctx, a.engine, sess, lease, turnID, nil, in, at)
	a.afterTurn(out.Result)
	return out, nil
}

// cutOffTurn returns the id of the session's last turn when its process
// died before ending it, "" otherwise. A turn ended when its last row the
// model sees is its answer, when it has a row saying how it failed or was
// interrupted, or when its end was recorded (the "turn" event every
// ending writes, unless telemetry.no_record). Rows of a turn that was never
// admitted (unsent) are no turn.
func (a *Agent) cutOffTurn(ctx context.Context, sessionID string) (string, error) {
	rows, err := a.cfg.Store.Messages(ctx, sessionID, store.MessageQuery{})
	if err != nil {
		return "", fmt.Errorf("read session %s: %w", sessionID, err)
	}
	turnID := ""
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].Kind != store.RowUnsent && rows[i].TurnID != "" {
			turnID = rows[i].TurnID
			break
		}
	}
	if turnID == "" {
		return "", nil
	}
	var last *store.Message
	for i := range rows {
		r := &rows[i]
		if r.TurnID != turnID || r.SessionID != sessionID {
			continue
		}
		if r.Kind == store.RowFailure || r.Kind == store.RowInterrupted {
			return "", nil
		}
		if !r.Kind.DisplayOnly() {
			last = r
		}
	}
	if last == nil || (last.Role == llm.RoleAssistant && len(last.ToolCalls) == 0 && !last.Synthetic && last.Kind == store.RowNormal) {
		return "", nil
	}
	te, ok := a.cfg.Store.(store.TurnEvents)
	if !ok {
		return turnID, nil
	}
	evs, err := te.TurnEvents(ctx, sessionID, turnID)
	if err != nil {
		return "", fmt.Errorf("read turn %s's events: %w", turnID, err)
	}
	for _, e := range evs {
		if e.Kind == "turn" {
			return "", nil
		}
	}
	return turnID, nil
}

// handoffs counts the turn's recorded handoffs.
func (a *Agent) handoffs(ctx context.Context, sessionID, turnID string) (int, error) {
	te, ok := a.cfg.Store.(store.TurnEvents)
	if !ok {
		return 0, nil
	}
	evs, err := te.TurnEvents(ctx, sessionID, turnID)
	if err != nil {
		return 0, fmt.Errorf("read turn %s's handoffs: %w", turnID, err)
	}
	n := 0
	for _, e := range evs {
		if e.Kind == "handoff" {
			n++
		}
	}
	return n, nil
}

// lastNode is the holder that last ran one of the turn's tools, as the
// ledger says ("a stopped process" when it says nothing).
func (a *Agent) lastNode(ctx context.Context, sessionID, turnID string) string {
	if l, ok := a.cfg.Store.(store.ToolLedger); ok {
		if recs, err := l.ToolCalls(ctx, sessionID, turnID); err == nil {
			for i := len(recs) - 1; i >= 0; i-- {
				if recs[i].Node != "" {
					return recs[i].Node
				}
			}
		}
	}
	return "a stopped process"
}

// markCutOff writes the row that closes a cut-off turn not continued.
// When the turn's user message is the last row the model would see, the
// row is an interrupted answer (sent as the neutral placeholder), so the
// message is never merged into the next user message on load; otherwise
// it is display-only.
func (a *Agent) markCutOff(ctx context.Context, lease store.Lease, turnID, text string) error {
	row := &store.Message{Message: llm.NewText(llm.RoleAssistant, text), TurnID: turnID,
		Kind: store.RowFailure, Synthetic: true, CreatedAt: a.now()}
	rows, err := a.cfg.Store.Messages(ctx, lease.SessionID, store.MessageQuery{})
	if err != nil {
		return fmt.Errorf("read session %s: %w", lease.SessionID, err)
	}
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].Kind.DisplayOnly() {
			continue
		}
		if rows[i].Role == llm.RoleUser && rows[i].TurnID == turnID {
			row.Kind, row.APIContent = store.RowInterrupted, transcript.InterruptedPlaceholder
		}
		break
	}
	if err := a.cfg.Store.Append(ctx, lease.Fence(), row); err != nil && !errors.Is(err, store.ErrEnded) {
		return fmt.Errorf("mark turn %s cut off: %w", turnID, err)
	}
	return nil
}

// sessionErr says in plain words why the session cannot be used (the
// message a turn's result would give), wrapping the store's error.
type sessionErr struct {
	msg string
	err error
}

func (e *sessionErr) Error() string { return e.msg }
func (e *sessionErr) Unwrap() error { return e.err }
