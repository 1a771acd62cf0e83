package turn

import (
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// Input is one turn to run.
type Input struct {
	// Session is the live session: its stored system prompt is used
	// verbatim, unless Prompt says it is out of date; the one rebuild then
	// updates SystemPrompt and PromptStamp in place.
	Session *store.Session
	// Prompt, when set, is the system prompt the session would be given
	// now: a stamp other than the stored one rebuilds the prompt once, at
	// the start of the turn (PromptRebuilt). nil keeps the stored prompt.
	Prompt *Prompt
	Fence  store.Fence // the turn lease's write fence
	TurnID string
	// Message is the user's message (role user).
	Message llm.Message
	// Stored, when set, is Message as already written under Fence: the
	// agent writes it in the transaction that takes the lease
	// (store.AcquireLeaseAppend), one commit for both. The engine then
	// finds it in the history it loads instead of appending it; unset, the
	// engine appends Message itself before the first call.
	Stored *store.Message
	Hooks  Hooks
	// Unattended turns (gateway, run --yes) may be stopped by the tool-loop guard.
	Unattended bool
	// Rotator, when set, continues the session in a child session at each
	// compression instead of archiving rows in place (see Rotator).
	Rotator Rotator
	// Prefix holds rows of another session replayed, read-only, before
	// this session's own: a background review sends its parent's stored
	// transcript byte for byte (so the provider's prompt cache hits) and
	// writes only to its own session. Prefix rows are never written,
	// deleted or compressed; an engine given a Prefix should have no
	// Compressor.
	Prefix []store.Message
	// Steer, when set, hands user messages to the turn while it runs
	// (see Steering for when they join and its closing rule).
	Steer *Steering
	// Budget, when set, is the iteration budget this turn shares with the
	// turn that delegated to it and its siblings (see IterationBudget);
	// Limits.MaxIterations still bounds this turn alone. nil: only that.
	Budget *IterationBudget
	// Resume continues TurnID, whose process died mid-turn, from its last
	// durable point instead of starting it: Message and Stored are unused
	// (the user's row is stored), a pending model call is made again and
	// an unfinished tool round finished through the ledger (resume.go).
	// Handoff, when set, is emitted first.
	Resume  bool
	Handoff *Handoff
}

// ErrLeaseLost is the cancellation cause the agent's watchdog uses when the
// session's lease is taken over; the turn then ends ExitLeaseLost.
var ErrLeaseLost = store.ErrLeaseLost
