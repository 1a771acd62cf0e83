package store

import (
	"context"
	"time"
)

// ToolCallState is where a tool call is in the ledger.
type ToolCallState string

const (
	// ToolCallStarted: the call was about to run (its side effects may or
	// may not have happened).
	ToolCallStarted ToolCallState = "started"
	// ToolCallFinished: the call ran to its end and its result row is
	// stored.
	ToolCallFinished ToolCallState = "finished"
)

// HashAbsent is the content hash recorded for a file that did not exist.
const HashAbsent = "absent"

// ToolCallRecord is one tool call in the ledger.
type ToolCallRecord struct {
	SessionID string
	TurnID    string
	CallID    string // unique within the session
	Tool      string
	// Node is the lease holder that ran the call; Fence its lease token.
	Node  string
	Fence int64
	// ArgsHash is the hex SHA-256 of the call's raw arguments.
	ArgsHash string
	State    ToolCallState
	// ResultID is the id of the stored result row (finished calls).
	ResultID int64
	IsError  bool
	// Path, BeforeHash and AfterHash are set for a call that changes one
	// file (write_file, edit_file): the file's hex SHA-256 (HashAbsent when
	// there was none) before the call ran and after it finished.
	Path       string
	BeforeHash string
	AfterHash  string
	StartedAt  time.Time
	FinishedAt time.Time // zero while started
}

// FillFinished fills the times ToolFinished may be given empty, alike in
// every backend: FinishedAt with now, and StartedAt with FinishedAt (a
// call never started is recorded whole).
func (r *ToolCallRecord) FillFinished(now time.Time) {
	if r.FinishedAt.IsZero() {
		r.FinishedAt = now
	}
	if r.StartedAt.IsZero() {
		r.StartedAt = r.FinishedAt
	}
}

// ToolLedger records each tool call before it runs and after it finished,
// so a turn continued on another node after its own died (a handoff) never
// runs a finished call again and knows which calls may have taken effect.
// It is declared for the turn, which writes it, and the handoff, which
// reads it; every backend in this module implements it (the storetest
// "ToolLedger" group checks that). DeleteSession removes a session's
// records.
type ToolLedger interface {
	// ToolStarted records rec as started, fenced like Append by
	// Fence{rec.SessionID, rec.Fence} (a Fence of 0 is unfenced): a node
	// that lost the session's lease gets KindLeaseLost and must not run the
	// call. Starting a call already recorded (a re-run after a handoff)
	// replaces its record.
	ToolStarted(ctx context.Context, rec *ToolCallRecord) error
	// ToolFinished marks (rec.SessionID, rec.CallID) finished with
	// rec.ResultID, IsError, AfterHash and FinishedAt; a call with no
	// started record is recorded whole. It is not fenced: the result row
	// it points at was already written under the fence.
	ToolFinished(ctx context.Context, rec *ToolCallRecord) error
	// ToolCalls lists a session's records, turnID "" for every turn, in
	// the order they were first started.
	ToolCalls(ctx context.Context, sessionID, turnID string) ([]ToolCallRecord, error)
}
