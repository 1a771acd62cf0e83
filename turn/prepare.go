package turn

import (
	"context"

	"github.com/talaria-agent/talaria/llm"
)

// prepare readies the iteration's inputs: the user messages that steer the
// running turn (steer.go), which tools are offered (none on the grace call)
// and the output cap.
func (e *Engine) prepare(ctx context.Context, st *state) {
	e.applySteers(ctx, st)
	st.offerTools = !st.res.GraceCall
}

// maxTokens is the output cap of the next call: a clamp when one was
// applied, else the configured cap, else the model's own maximum bounded so
// that one call cannot bill an unbounded answer.
func (e *Engine) maxTokens(st *state) int {
	if st.maxTokens > 0 {
		return st.maxTokens
	}
	if e.cfg.Limits.MaxTokens > 0 {
		return e.cfg.Limits.MaxTokens
	}
	return 0
}

// toolSpecs is what the request offers.
func (e *Engine) toolSpecs(st *state) []llm.ToolSpec {
	if !st.offerTools {
		return nil
	}
	specs := e.cfg.Tools.Specs()
	if len(specs) == 0 {
		return nil
	}
	return specs
}
