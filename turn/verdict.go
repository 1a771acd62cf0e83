package turn

// verdict is what a phase says happens next. Phases never jump on their
// own: they return a verdict and the loop in engine.go acts on it, so every
// exit reaches the finalizer.
type verdict int

const (
	// proceed to the next phase of this iteration.
	proceed verdict = iota
	// restart the iteration from the top without spending budget: the
	// request changed before reaching a provider (compression, fallback).
	restart
	// next iteration: the model's answer was handled and the loop goes on
	// (after a tool round, a nudge, a continuation).
	next
	// finish leaves the loop; st.res.Exit says why. The finalizer runs next.
	finish
)

func (v verdict) String() string {
	switch v {
	case proceed:
		return "proceed"
	case restart:
		return "restart"
	case next:
		return "next"
	case finish:
		return "finish"
	}
	return "verdict(?)"
}
