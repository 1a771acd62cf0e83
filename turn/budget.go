package turn

import "sync"

// IterationBudget is the number of model calls a turn and every child it
// runs (delegated subagents) may make together, so Limits.MaxIterations
// bounds the whole turn, not each session of it. Each turn of the tree
// draws one iteration per call; a turn that finds it spent makes its
// tool-less grace call to sum up, which is not drawn (one per turn).
// Safe for concurrent use: children of one round run in parallel.
type IterationBudget struct {
	mu   sync.Mutex
	left int
}

// NewIterationBudget returns a budget of n iterations.
func NewIterationBudget(n int) *IterationBudget { return &IterationBudget{left: max(n, 0)} }

// Remaining is how many iterations are left.
func (b *IterationBudget) Remaining() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.left
}

// take draws one iteration; false when none is left.
func (b *IterationBudget) take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.left <= 0 {
		return false
	}
	b.left--
	return true
}

// give returns an iteration drawn for a call that never went out.
func (b *IterationBudget) give() {
	b.mu.Lock()
	b.left++
	b.mu.Unlock()
}

// haveIteration reports whether the iteration about to start may call the
// model with tools: the turn's own limit is not reached and, with a shared
// budget, one iteration of it is held. The iteration is drawn here, before
// the call, so parallel children cannot together overdraw; an iteration
// that restarts without a call (a compression pass, a fallback switch)
// keeps what it holds for the next one (st.heldIteration), and the
// finalizer gives back one no call used.
func (e *Engine) haveIteration(st *state) bool {
	if st.res.Iterations >= e.cfg.Limits.MaxIterations {
		return false
	}
	b := st.in.Budget
	if b == nil || st.heldIteration {
		return true
	}
	if !b.take() {
		return false
	}
	st.heldIteration = true
	return true
}

// usedIteration marks the held iteration as spent by a call.
func (st *state) usedIteration() { st.heldIteration = false }

// releaseIteration gives back an iteration held by no call (turn end).
func (st *state) releaseIteration() {
	if st.heldIteration && st.in.Budget != nil {
		st.in.Budget.give()
		st.heldIteration = false
	}
}
