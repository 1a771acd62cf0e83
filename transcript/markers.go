package transcript

// Texts that Repair and Project write on their own. They are neutral
// statements of fact, never instructions: the model reads them as its own
// earlier words or as tool output, and an instruction there (an interrupt
// scaffold replayed as assistant text) makes it echo itself in a loop.
const (
	// InterruptedPlaceholder is the text replayed for an assistant row that
	// has nothing to send (an interrupted or empty answer).
	InterruptedPlaceholder = "[response interrupted]"
	// MissingToolResult is the synthetic result of a call whose result was
	// never recorded (a crash or interrupt while the tool ran).
	MissingToolResult = "[no result: the tool call was interrupted before it finished]"
	// EmptyUserText replaces the text of a user message that has none;
	// providers reject empty user turns.
	EmptyUserText = "(empty message)"
)
