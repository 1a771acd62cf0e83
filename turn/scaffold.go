package turn

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
	// InterruptedToolResult pairs a tool call that never finished because
	// the turn was interrupted.
	InterruptedToolResult = "[interrupted: the turn was stopped before this tool call finished; its effects, if any, are unknown]"
	// SkippedToolResult pairs a tool call that was never started.
	SkippedToolResult = "[skipped: the turn ended before this tool call ran]"
	// LoopStoppedToolResult pairs calls skipped after the tool-loop guard
	// stopped an unattended turn.
	LoopStoppedToolResult = "[skipped: the turn was stopped because the same tool call kept returning the same result]"
)
