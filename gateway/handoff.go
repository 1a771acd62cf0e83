package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// What happens to a turn whose node died mid-turn (Config.Handoff).
const (
	HandoffContinue  = "continue"
	HandoffInterrupt = "interrupt"
)

// handoffSeq is where handoff events start in a turn's event log (Seq),
// above any seq the turn's own recorder gives its events.
const handoffSeq = 1 << 20

// handoffPolicy is the principal's handoff mode and bound.
func (g *Gateway) handoffPolicy(principal string) (mode string, most int) {
	mode, most = g.cfg.Handoff, g.cfg.HandoffMax
	l := g.cfg.Limits.Default
	if p, ok := g.cfg.Limits.Principals[principal]; ok {
		l.Handoff, l.HandoffMax = cmp.Or(p.Handoff, l.Handoff), cmp.Or(p.HandoffMax, l.HandoffMax)
	}
	return cmp.Or(l.Handoff, mode), cmp.Or(l.HandoffMax, most)
}

// cutOff is a turn whose node died, as takeOver decided it: continued
// (handoff set) or ended (res set; the turn was marked cut off).
type cutOff struct {
	handoff *turn.Handoff
	res     *turn.Result
}

// takeOver decides a turn whose node died after it stored rows: it is
// continued here from its last durable point (handoff: continue, under the
// bound), or marked cut off — interrupted (handoff: interrupt) or
// handoff_limit. Each handoff is recorded in the turn's event log before
// the turn continues, so the bound holds whichever node dies next.
func (g *Gateway) takeOver(ctx context.Context, q store.QueuedMessage, principal, reason string) (cutOff, error) {
	mode, most := g.handoffPolicy(principal)
	if mode == HandoffInterrupt {
		g.m.handoff("interrupted")
		res := &turn.Result{SessionID: q.SessionID, TurnID: q.TurnID, Exit: turn.ExitInterrupted,
			Explanation: "The node running this turn stopped; everything it stored is kept. It was not re-run (handoff: interrupt): send the message again to continue."}
		return cutOff{res: res}, g.markCutOff(ctx, q, cutOffText)
	}
	evs, err := g.store.TurnEvents(ctx, q.SessionID, q.TurnID)
	if err != nil {
		return cutOff{}, fmt.Errorf("gateway: read turn %s's handoffs: %w", q.TurnID, err)
	}
	n := 0
	for _, e := range evs {
		if e.Kind == "handoff" {
			n++
		}
	}
	if n >= most {
		g.m.handoff("limit")
		text := fmt.Sprintf("Turn stopped: its node died %d times while running it, more than it may be handed off (handoff_max %d). "+
			"Everything it stored is kept; a tool or request of this turn may be what kills its node. Send a message to go on.", n+1, most)
		res := &turn.Result{SessionID: q.SessionID, TurnID: q.TurnID, Exit: turn.ExitHandoffLimit, Explanation: text}
		return cutOff{res: res}, g.markCutOff(ctx, q, text)
	}
	h := &turn.Handoff{From: g.lastNode(ctx, q), To: cmp.Or(g.cfg.Holder, "this node"), Reason: reason, Count: n + 1, Max: most}
	detail, _ := json.Marshal(h)
	ev := store.TurnEvent{SessionID: q.SessionID, TurnID: q.TurnID, Seq: handoffSeq + n + 1, Kind: "handoff", Name: h.To,
		Start: g.cfg.Now(), Detail: string(detail)}
	if err := g.store.AppendTurnEvents(ctx, ev); err != nil {
		return cutOff{}, fmt.Errorf("gateway: record turn %s's handoff: %w", q.TurnID, err)
	}
	g.m.handoff("continued")
	g.log.Warn("continuing a turn whose node stopped", "session", q.SessionID, "turn", q.TurnID, "from", h.From, "handoff", h.Count, "max", most)
	return cutOff{handoff: h}, nil
}

// lastNode is the node that last ran one of the turn's tools, as the
// ledger says ("a stopped node" when it says nothing).
func (g *Gateway) lastNode(ctx context.Context, q store.QueuedMessage) string {
	if l, ok := g.store.(store.ToolLedger); ok {
		if recs, err := l.ToolCalls(ctx, q.SessionID, q.TurnID); err == nil {
			for i := len(recs) - 1; i >= 0; i-- {
				if recs[i].Node != "" {
					return recs[i].Node
				}
			}
		}
	}
	return "a stopped node"
}
