package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/store"
)

// handoffOut is one handoff of a turn of the session, from its recorded
// "handoff" event: when, from which process or node to which, why, which
// one of at most how many, the fence the turn went on under (0: not
// recorded), and how that continuation ended — the turn's exit for its
// last handoff, "died again" for one whose continuation was itself cut
// off, "" while the turn has not ended.
type handoffOut struct {
	TurnID  string    `json:"turn_id"`
	At      time.Time `json:"at"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	Reason  string    `json:"reason"`
	Count   int       `json:"count"`
	Max     int       `json:"max"`
	Fence   int64     `json:"fence,omitempty"`
	Outcome string    `json:"outcome"`
}

// handoffsOf lists the session's handoffs in the order they happened.
func handoffsOf(ctx context.Context, st store.TurnEvents, sessionID string) ([]handoffOut, error) {
	evs, err := st.TurnEvents(ctx, sessionID, "")
	if err != nil {
		return nil, fmt.Errorf("read the session's turn events: %w", err)
	}
	exits := map[string]string{} // turn → its recorded exit
	last := map[string]int{}     // turn → its highest handoff count
	out := []handoffOut{}        // [] in --json when there were none
	for _, e := range evs {
		switch e.Kind {
		case "turn":
			var d struct {
				Exit string `json:"exit"`
			}
			if json.Unmarshal([]byte(e.Detail), &d) == nil {
				exits[e.TurnID] = d.Exit
			}
		case "handoff":
			var r agent.HandoffRecord
			if err := json.Unmarshal([]byte(e.Detail), &r); err != nil {
				continue // not ours to judge: trace shows it raw
			}
			out = append(out, handoffOut{TurnID: e.TurnID, At: e.Start, From: r.From, To: r.To, Reason: r.Reason,
				Count: r.Count, Max: r.Max, Fence: r.Fence})
			last[e.TurnID] = max(last[e.TurnID], r.Count)
		}
	}
	for i := range out {
		h := &out[i]
		if h.Count < last[h.TurnID] {
			h.Outcome = "died again"
		} else {
			h.Outcome = exits[h.TurnID]
		}
	}
	return out, nil
}

// printHandoffs says how often the session's turns moved, and each move.
func printHandoffs(w io.Writer, hs []handoffOut) {
	if len(hs) == 0 {
		return
	}
	fmt.Fprintf(w, "handoffs: %d (a turn whose process or node died, continued from its last saved step)\n", len(hs))
	for _, h := range hs {
		outcome := h.Outcome
		if outcome == "" {
			outcome = "not ended"
		}
		fence := ""
		if h.Fence != 0 {
			fence = fmt.Sprintf(", fence %d", h.Fence)
		}
		fmt.Fprintf(w, "  turn %s %s: from %s to %s (%s), handoff %d of at most %d%s → %s\n",
			h.TurnID, h.At.Local().Format("2006-01-02 15:04:05"), h.From, h.To, h.Reason, h.Count, h.Max, fence, outcome)
	}
}
