package api

// EventType names a Server-Sent Event. Clients must ignore types they do not
// know: new ones are added over time (subagent events, for example).
type EventType string

const (
	// EventMessage is a stored transcript row (user message, assistant
	// answer, tool result, failure row). Its id is built from the row's seq,
	// so a reconnecting client gets rows it missed from the database.
	EventMessage        EventType = "message"
	EventMessageDeleted EventType = "message_deleted"
	EventTurnQueued     EventType = "turn_queued"
	// EventTurnSteered: a message posted with busy: steer joined the
	// running turn (turn_id) as a user message; steered_turn_id is the id
	// it was queued under, which never runs as a turn of its own.
	EventTurnSteered    EventType = "turn_steered"
	EventTurnStarted    EventType = "turn_started"
	EventTextDelta      EventType = "text_delta"
	EventReasoningDelta EventType = "reasoning_delta"
	// EventDiscard voids the text streamed since the current API call
	// began (the stream died and is retried).
	EventDiscard          EventType = "discard"
	EventToolStarted      EventType = "tool_started"
	EventToolFinished     EventType = "tool_finished"
	EventApprovalRequired EventType = "approval_required"
	EventApprovalResolved EventType = "approval_resolved"
	// EventStatus is a one-line progress note: retries, fallback,
	// compression, guards.
	EventStatus       EventType = "status"
	EventTurnFinished EventType = "turn_finished"
	// EventSubagentStarted and EventSubagentFinished bracket a child
	// session the turn runs (the delegate tool); several may overlap.
	EventSubagentStarted  EventType = "subagent_started"
	EventSubagentFinished EventType = "subagent_finished"
)
