package transcript

import (
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// Project builds the messages sent to the model from a session's durable
// rows, in order, without modifying them:
//   - archived rows and display-only rows (Kind.DisplayOnly) are left out;
//   - a row's APIContent, when set, replaces its text parts on the wire with
//     one text part (image parts are kept after it), so replayed bytes stay
//     those that were sent;
//   - an empty assistant row of kind RowInterrupted without APIContent (one
//     written before the engine stamped APIContent) is sent as
//     InterruptedPlaceholder here, so such rows converge instead of being
//     reported as repairs on every call;
//   - then Repair, whose Report is returned.
func Project(rows []store.Message) ([]llm.Message, Report) {
	msgs := make([]llm.Message, 0, len(rows))
	for i := range rows {
		if m, ok := projectRow(&rows[i]); ok {
			msgs = append(msgs, m)
		}
	}
	return Repair(msgs)
}

// withText returns a new part list: text first, then the non-text parts of
// parts.
func withText(text string, parts []llm.Part) []llm.Part {
	n := 1
	for _, p := range parts {
		if p.Type != llm.PartText {
			n++
		}
	}
	out := make([]llm.Part, 1, n)
	out[0] = llm.TextPart(text)
	for _, p := range parts {
		if p.Type != llm.PartText {
			out = append(out, p)
		}
	}
	return out
}
