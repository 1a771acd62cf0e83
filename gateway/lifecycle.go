package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/transcript"
	"github.com/talaria-agent/talaria/turn"
)

// errShutdown is the cause given to turns still running after the drain.
var errShutdown = errors.New("the server is shutting down")

// Start recovers from the previous process: a queued message whose turn
// had started (its user row is stored) was cut off by a crash or kill; it is
// marked interrupted with a display-only row and not re-run. Messages still
// waiting run now, oldest first per session.
//
// On a cluster nothing is marked at start: another node may be running
// those turns. The sweep takes over a queue once its session's lease has
// expired or been released (see cluster.go).
func (g *Gateway) Start(ctx context.Context) error {
	if g.cluster != nil {
		g.startCluster()
		return nil
	}
	list, err := g.store.Queued(ctx, "")
	if err != nil {
		return fmt.Errorf("gateway: read the message queue: %w", err)
	}
	pending := map[string]int{}
	for _, q := range list {
		if !q.StartedAt.IsZero() {
			ran, err := g.turnStored(ctx, q)
			if err != nil {
				return err
			}
			if ran {
				principal := ""
				if s, err := g.store.GetSession(ctx, q.SessionID); err == nil {
					principal = s.Principal
				}
				co, err := g.takeOver(ctx, q, principal, "the previous server process stopped")
				if err != nil {
					return err
				}
				if co.handoff == nil {
					continue // marked cut off and dequeued
				}
				g.mu.Lock()
				if g.resumes == nil {
					g.resumes = map[int64]*turn.Handoff{}
				}
				g.resumes[q.ID] = co.handoff
				g.mu.Unlock()
			}
		}
		pending[q.SessionID]++
		principal := ""
		if s, err := g.store.GetSession(ctx, q.SessionID); err == nil {
			principal = s.Principal
		}
		g.mu.Lock()
		g.turns[q.TurnID] = &turnRef{sessionID: q.SessionID, principal: principal, queueID: q.ID, text: q.Text}
		g.mu.Unlock()
	}
	for sid, n := range pending {
		st := g.state(sid)
		st.mu.Lock()
		st.pending += n
		g.m.queuedMessages(int64(n))
		g.startWorker(st)
		st.mu.Unlock()
		g.log.Info("running queued messages left by the previous process", "session", sid, "count", n)
	}
	return nil
}

// turnStored reports whether the queued message's turn got as far as
// storing its user row.
func (g *Gateway) turnStored(ctx context.Context, q store.QueuedMessage) (bool, error) {
	rows, err := g.store.Messages(ctx, q.SessionID, store.MessageQuery{IncludeArchived: true})
	if err != nil {
		return false, fmt.Errorf("gateway: read session %s: %w", q.SessionID, err)
	}
	for i := range rows {
		if rows[i].TurnID == q.TurnID {
			return true, nil
		}
	}
	return false, nil
}

// markCutOff writes the row that says a turn was cut off, and takes its
// message off the queue. When the turn's user message is the last thing
// the model would see, the row is an interrupted answer (sent as the
// neutral placeholder), so the cut-off message is never merged into the
// next user message on load; otherwise it is display-only.
func (g *Gateway) markCutOff(ctx context.Context, q store.QueuedMessage, text string) error {
	row := &store.Message{
		Message:   llm.NewText(llm.RoleAssistant, text),
		TurnID:    q.TurnID,
		Kind:      store.RowFailure,
		Synthetic: true,
		CreatedAt: g.cfg.Now(),
	}
	last, err := g.lastSent(ctx, q.SessionID)
	if err != nil {
		return err
	}
	if last != nil && last.Role == llm.RoleUser && last.TurnID == q.TurnID {
		row.Kind, row.APIContent = store.RowInterrupted, transcript.InterruptedPlaceholder
	}
	// Unfenced: the turn's process is gone, and the row closes that turn
	// after its last stored row, so it cannot break its tool-call pairing.
	if err := g.obs.Append(ctx, store.Fence{SessionID: q.SessionID}, row); err != nil && !errors.Is(err, store.ErrEnded) {
		return fmt.Errorf("gateway: mark turn %s interrupted: %w", q.TurnID, err)
	}
	g.log.Warn("a turn was running when its process stopped; marked cut off", "session", q.SessionID, "turn", q.TurnID)
	return g.store.Dequeue(ctx, q.ID)
}

// cutOffText is the row of a turn cut off and not continued.
const cutOffText = "Turn interrupted: the server stopped while this turn was running. " +
	"Everything it stored is kept; it was not re-run. Send the message again to continue."

// lastSent is the session's last row a model would be sent, nil if none.
func (g *Gateway) lastSent(ctx context.Context, sessionID string) (*store.Message, error) {
	rows, err := g.store.Messages(ctx, sessionID, store.MessageQuery{})
	if err != nil {
		return nil, fmt.Errorf("gateway: read session %s: %w", sessionID, err)
	}
	for i := len(rows) - 1; i >= 0; i-- {
		if !rows[i].Archived && !rows[i].Kind.DisplayOnly() {
			return &rows[i], nil
		}
	}
	return nil, nil
}

// Shutdown stops the gateway: no new turn starts (posts answer 503), running
// turns get drain to finish, then are interrupted (they finalize and release
// their leases; subscribers get their turn_finished), and finally every
// event stream ends. Queued messages stay queued for the next start. ctx
// bounds the wait for interrupted turns to end.
func (g *Gateway) Shutdown(ctx context.Context, drain time.Duration) error {
	if !g.draining.CompareAndSwap(false, true) {
		return nil
	}
	close(g.stopping)
	if g.stopSweep != nil {
		g.stopSweep() // before waiting for the workers: it starts them
	}
	done := make(chan struct{})
	go func() {
		g.workers.Wait()
		close(done)
	}()
	t := time.NewTimer(drain)
	defer t.Stop()
	var err error
	select {
	case <-done:
	case <-t.C:
		g.log.Warn("drain time is over; interrupting the turns still running", "drain", drain)
		g.stopTurns(errShutdown)
		select {
		case <-done:
		case <-ctx.Done():
			err = fmt.Errorf("gateway: turns did not end after the interrupt: %w", ctx.Err())
		}
	case <-ctx.Done():
		g.stopTurns(errShutdown)
		err = ctx.Err()
	}
	g.stopTurns(errShutdown)
	if g.stopCluster != nil {
		// Deliver what the drained turns stored before the relay stops.
		fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for id := range g.hubs.all() {
			g.relay.fetch(fctx, id)
		}
		cancel()
		g.stopCluster()
		g.bg.Wait()
	}
	close(g.closing)
	return err
}
