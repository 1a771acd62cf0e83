package turn

import (
	"strconv"

	"github.com/talaria-agent/talaria/llm"
)

// Texts the engine writes into a transcript on its own. Each is a named
// constant so rows carrying them can be recognised (they are also marked
// Synthetic in the store) and never mistaken for the user's words.
const (
	// BudgetNotice precedes the grace call: the iteration budget is spent
	// and the model gets one call, without tools, to sum up.
	BudgetNotice = "[talaria: the iteration budget for this turn is spent. Tools are no longer available. " +
		"Reply now with a short summary of what you did, what you found, and what is left to do.]"
	// LengthContinueNudge asks the model to continue an answer that hit the
	// output limit, from exactly where it stopped.
	LengthContinueNudge = "[talaria: your previous answer was cut off by the output limit. " +
		"Continue exactly where it stopped; do not repeat what you already wrote.]"
	// LengthTooLargeNudge follows an answer the output limit cut before any
	// of it arrived: there is nothing to continue from, so the model is told
	// the answer was too large and asked for it in smaller pieces.
	LengthTooLargeNudge = "[talaria: your previous answer was cut off by the output limit before any of it arrived: " +
		"it was too large to fit. Give the answer in smaller pieces: the first part now, the rest in later replies " +
		"(for a large file, write it in several parts).]"
	// TruncatedCallNudgePrefix begins the note sent after a tool call was
	// cut off by the output limit (see truncatedCallNudge).
	TruncatedCallNudgePrefix = "[talaria: your previous tool call was cut off by the output limit"
	// CutInTransitNudgePrefix begins the note sent when the connection died
	// while a large tool call's arguments were streaming.
	CutInTransitNudgePrefix = "[talaria: your previous answer was lost in transit"
	// InterruptedToolResult pairs a tool call that never finished because
	// the turn was interrupted.
	InterruptedToolResult = "[interrupted: the turn was stopped before this tool call finished; its effects, if any, are unknown]"
	// SkippedToolResult pairs a tool call that was never started.
	SkippedToolResult = "[skipped: the turn ended before this tool call ran]"
	// LoopStoppedToolResult pairs calls skipped after the tool-loop guard
	// stopped an unattended turn.
	LoopStoppedToolResult = "[skipped: the turn was stopped because the same tool call kept returning the same result]"
)

// truncatedCallNudge tells the model its call was cut and did not run.
func truncatedCallNudge(c llm.ToolCall) string {
	return TruncatedCallNudgePrefix + " while writing the arguments of " + c.Name +
		" (" + strconv.Itoa(len(c.Arguments)) + " bytes arrived), so it did not run. " +
		"Make the call smaller: split large content over several calls (for example, write a file in parts) and keep arguments short.]"
}

// cutInTransitNudge tells the model its large call never arrived.
func cutInTransitNudge(name string, bytes int) string {
	return CutInTransitNudgePrefix + ": the connection dropped while the arguments of your " + name +
		" call were streaming (" + strconv.Itoa(bytes) + " bytes had arrived), so it did not run. " +
		"The call was too large to arrive in one piece: split it into several smaller calls.]"
}
