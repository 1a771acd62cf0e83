package turn

import (
	"context"
	"sync"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// SteerMessage is a user message handed to a running turn. ID is the
// embedder's (a queued message's turn id, say), given back in
// Hooks.Steered so the embedder knows which of its messages joined.
type SteerMessage struct {
	ID   string
	Text string
}

// Steering hands user messages to a running turn (Input.Steer). A message
// joins the turn at its next iteration boundary: after the tool round that
// is running (never inside one, so every tool call keeps its result next
// to it), as a user row the model reads on its next call. A message that
// is still waiting when the turn makes its last call never joins it.
//
// Closing rule: the embedder calls Close once Run has returned. Close stops
// Send from accepting and returns the messages that did not join, in order,
// which the embedder runs as the next turn. Send after Close returns false:
// the message was not taken and is the embedder's to queue.
//
// A Steering is safe for concurrent use; one belongs to one turn.
type Steering struct {
	mu      sync.Mutex
	pending []SteerMessage
	closed  bool
}

// NewSteering returns an open Steering with no messages.
func NewSteering() *Steering { return &Steering{} }

// Send offers m to the turn. It reports false when the Steering is closed
// (the turn is over): m was not taken.
func (s *Steering) Send(m SteerMessage) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.pending = append(s.pending, m)
	return true
}

// Close stops accepting messages and returns those that never joined the
// turn (see the closing rule on Steering).
func (s *Steering) Close() []SteerMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	left := s.pending
	s.pending = nil
	return left
}

// take removes and returns the waiting messages.
func (s *Steering) take() []SteerMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.pending
	s.pending = nil
	return out
}

// steerable reports whether the turn is at a boundary where a user message
// may join: after the user's own message, a finished tool round (every
// call paired) or an engine notice — not in the middle of a length
// continuation or a cut tool call's retry, whose next call must see its
// prompt last.
func (st *state) steerable() bool {
	if len(st.fragments) > 0 || st.cutCall != nil || len(st.rows) == 0 {
		return false
	}
	last := st.rows[len(st.rows)-1]
	return last.Role == llm.RoleTool || last.Role == llm.RoleUser
}

// applySteers writes the messages waiting in Input.Steer as user rows
// (store.RowSteer), durable and fenced before the call that reads them.
// A write that fails gives the messages back, so they join later or
// become the next turn; it does not end the turn.
func (e *Engine) applySteers(ctx context.Context, st *state) {
	s := st.in.Steer
	if s == nil || !st.steerable() {
		return
	}
	msgs := s.take()
	if len(msgs) == 0 {
		return
	}
	rows := make([]*store.Message, len(msgs))
	for i, m := range msgs {
		rows[i] = &store.Message{Message: llm.NewText(llm.RoleUser, m.Text), Kind: store.RowSteer}
	}
	if err := e.appendRows(ctx, st, rows...); err != nil {
		e.log.Warn("could not add a steering message to the turn; it waits", "session", st.sessionID(), "error", err)
		s.mu.Lock()
		s.pending = append(msgs, s.pending...)
		s.mu.Unlock()
		return
	}
	for _, m := range msgs {
		st.hooks.emit(Steered{ID: m.ID, Text: m.Text})
	}
}
