package turn

import (
	"context"

	"github.com/talaria-agent/talaria/llm"
)

// savedUsage is the part of a turn's usage already added to the session.
type savedUsage struct {
	usage llm.Usage
	cost  float64
	calls int
}

// flushUsage adds what the turn spent since the last flush to the session,
// so a turn killed later (kill -9, a crash) keeps the cost of every answer
// it already received. It runs after each answer and at the end of the
// turn; a failed write is retried by the next flush.
func (e *Engine) flushUsage(ctx context.Context, st *state) {
	d := llm.Usage{
		InputTokens:      st.res.Usage.InputTokens - st.saved.usage.InputTokens,
		OutputTokens:     st.res.Usage.OutputTokens - st.saved.usage.OutputTokens,
		CacheReadTokens:  st.res.Usage.CacheReadTokens - st.saved.usage.CacheReadTokens,
		CacheWriteTokens: st.res.Usage.CacheWriteTokens - st.saved.usage.CacheWriteTokens,
		ReasoningTokens:  st.res.Usage.ReasoningTokens - st.saved.usage.ReasoningTokens,
		Reported:         st.res.Usage.Reported,
	}
	cost := st.res.CostUSD - st.saved.cost
	calls := st.res.APICalls - st.saved.calls
	if calls == 0 && d == (llm.Usage{Reported: d.Reported}) {
		return
	}
	dctx, cancel := durable(ctx)
	defer cancel()
	if err := e.cfg.Store.AddUsage(dctx, st.sessionID(), d, cost, int64(calls)); err != nil {
		e.log.Warn("could not add usage to the session", "session", st.sessionID(), "error", err)
		return
	}
	st.saved = savedUsage{usage: st.res.Usage, cost: st.res.CostUSD, calls: st.res.APICalls}
}
