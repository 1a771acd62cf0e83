package turn

import (
	"context"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// savedUsage is the part of a turn's usage already added to the session.
type savedUsage struct {
	usage llm.Usage
	cost  float64
	calls int
}

// unsaved returns what the turn spent that is not on the session yet (zero
// when there is nothing to add) and the tally to record as saved once it
// is.
//
// An answer's cost goes to disk with the answer's row: appendRows adds it
// in the same transaction (store.AppendSpend), so the commit that makes
// the answer durable makes its cost durable too, and a turn killed after
// it keeps both. Spending no row follows at once (an empty answer that is
// retried, a refusal that falls back, a compression pass) is flushed on
// its own by the next iteration's begin or by finalize.
func (st *state) unsaved() (store.Spend, savedUsage) {
	now := savedUsage{usage: st.res.Usage, cost: st.res.CostUSD, calls: st.res.APICalls}
	d := llm.Usage{
		InputTokens:      now.usage.InputTokens - st.saved.usage.InputTokens,
		OutputTokens:     now.usage.OutputTokens - st.saved.usage.OutputTokens,
		CacheReadTokens:  now.usage.CacheReadTokens - st.saved.usage.CacheReadTokens,
		CacheWriteTokens: now.usage.CacheWriteTokens - st.saved.usage.CacheWriteTokens,
		ReasoningTokens:  now.usage.ReasoningTokens - st.saved.usage.ReasoningTokens,
		Reported:         now.usage.Reported,
	}
	calls := now.calls - st.saved.calls
	if calls == 0 && d == (llm.Usage{Reported: d.Reported}) {
		return store.Spend{}, now
	}
	return store.Spend{Usage: d, CostUSD: now.cost - st.saved.cost, APICalls: int64(calls)}, now
}

// flushUsage adds what the turn spent since the last write that carried it
// to the session, on its own (unfenced, like AddUsage: a turn that lost
// its lease still records what it spent). A failed write is retried by the
// next one.
func (e *Engine) flushUsage(ctx context.Context, st *state) {
	sp, now := st.unsaved()
	if sp.IsZero() {
		return
	}
	dctx, cancel := durable(ctx)
	defer cancel()
	if err := e.cfg.Store.AddUsage(dctx, st.sessionID(), sp.Usage, sp.CostUSD, sp.APICalls); err != nil {
		e.log.Warn("could not add usage to the session", "session", st.sessionID(), "error", err)
		return
	}
	st.saved = now
}
