package gateway

import (
	"encoding/json"

	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/turn"
)

// The SSE events of a turn are its updates (turn.Update), one to one:
//
//   - text_delta, reasoning_delta, discard, tool_started, tool_finished,
//     approval_required, subagent_started, subagent_finished: the update's
//     kind is the event type and its JSON the payload (plus type, turn_id);
//   - every status update (turn.Status) is a "status" event: line (the
//     update rendered as prose), kind (its turn.StatusKind), update (the
//     update's kind) and, under that kind's name, the update itself — a
//     client branches on kind or decodes the update, never on line;
//   - turn_steered and turn_finished carry turn.Steered and
//     turn.Finished, published by the runner when the queue allows.
//
// Updates without an event (call_started, todo) are not streamed.

// updateEvent is the SSE event of a turn's update; ok is false for an
// update that is not streamed.
func updateEvent(turnID string, u turn.Update) (typ EventType, data []byte, ok bool) {
	switch u := u.(type) {
	case turn.Status:
		line := u.Line()
		if line == "" {
			return "", nil, false // the decision another update says (a fallback)
		}
		k := turn.KindOf(u)
		return api.EventStatus, encode(api.EventStatus, turnID, map[string]any{"line": line, "kind": u.StatusKind(), "update": k, k: u}), true
	case turn.TextDelta, turn.ReasoningDelta, turn.Discard, turn.ToolStarted, turn.ToolFinished,
		turn.ApprovalRequired, turn.SubagentStart, turn.SubagentEnd:
		typ = EventType(turn.KindOf(u))
		return typ, encodeUpdate(typ, turnID, u), true
	}
	return "", nil, false
}

// encodeUpdate is encode for a typed payload: the update's own fields,
// after type and turn_id.
func encodeUpdate(typ EventType, turnID string, u turn.Update) []byte {
	b, err := json.Marshal(u)
	if err != nil || len(b) < 2 || b[0] != '{' {
		return encode(typ, turnID, map[string]any{"encode_error": "not an object"})
	}
	head := encode(typ, turnID, nil) // {"turn_id":..,"type":..}
	if len(b) == 2 {                 // {}
		return head
	}
	out := make([]byte, 0, len(head)+len(b))
	out = append(out, head[:len(head)-1]...)
	out = append(out, ',')
	return append(out, b[1:]...)
}
