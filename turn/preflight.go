package turn

import (
	"context"
	"errors"
	"fmt"

	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/store"
)

// preflight runs before every API call: tool results, compression and a
// fallback switch all change the request size or the window. When the
// request would pass the threshold it compresses first and restarts the
// iteration (refunded: nothing reached a provider).
func (e *Engine) preflight(ctx context.Context, st *state) verdict {
	st.estimate = st.acct.Estimate(st.req)
	limit := e.cfg.Threshold.Limit(st.model.Window)
	if st.estimate <= limit || e.cfg.Compressor == nil || !st.budget.Allow() {
		// Over the threshold with no attempts left, the request still goes:
		// the threshold is a fraction of the window, and a real overflow
		// comes back as an error the retry loop handles.
		return proceed
	}
	st.hooks.status(fmt.Sprintf("context is ~%d tokens, over the %d-token threshold of %s: compressing",
		st.estimate, limit, e.route(st).Model))
	return e.compress(ctx, st, limit, false)
}

// compress runs one compression pass and makes its result the durable,
// live transcript. It returns restart when the transcript changed, proceed
// when the pass made no progress (further passes are then blocked this
// turn), and finish when compression failed.
func (e *Engine) compress(ctx context.Context, st *state, target int, force bool) verdict {
	st.budget.Spend()
	out, err := e.cfg.Compressor.Compress(ctx, compact.Input{
		System:   st.in.Session.SystemPrompt,
		Tools:    st.req.Tools,
		Rows:     st.rows,
		Target:   target,
		Measured: st.estimate,
		Force:    force,
	})
	e.addAuxUsage(st, out)
	switch {
	case errors.Is(err, compact.ErrUnderTarget):
		return proceed
	case errors.Is(err, compact.ErrNoProgress), errors.Is(err, compact.ErrNothingToCompress):
		st.budget.Block()
		st.hooks.status("compression made no progress; not trying again this turn")
		return proceed
	case err != nil:
		if e.interrupted(ctx, st) {
			return finish
		}
		st.setExit(ExitCompressionFailed, &Failure{
			Reason:    "compression_failed",
			Retryable: true,
			Provider:  e.route(st).Provider.Name(),
			Model:     e.route(st).Model,
			Message:   "The conversation is too long for the model and summarizing it failed; your history is kept. Retry, or set compression.on_failure: placeholder.",
			Detail:    err.Error(),
		})
		return finish
	}
	rows := make([]*store.Message, len(out.Rows))
	for i := range out.Rows {
		r := out.Rows[i]
		rows[i] = &r
	}
	dctx, cancel := durable(ctx)
	err = e.cfg.Store.Replace(dctx, st.in.Fence, st.lastSeq(), rows...)
	cancel()
	if err != nil {
		st.setExit(ExitPersistenceFailed, persistFailure("the compressed history", err))
		return finish
	}
	st.rows = st.rows[:0]
	for _, r := range rows {
		st.rows = append(st.rows, *r)
	}
	st.acct.Reset()
	st.compactions++
	msg := fmt.Sprintf("context compressed: ~%d → ~%d tokens", out.Before, out.After)
	if out.Summarized > 0 {
		msg += fmt.Sprintf(" (%d messages summarized)", out.Summarized)
	}
	if out.SummaryFailed {
		msg += " — the summary failed, a placeholder stands in for the removed messages"
	}
	st.hooks.status(msg)
	return restart
}

// addAuxUsage counts the summary call's tokens and cost in the turn.
func (e *Engine) addAuxUsage(st *state, out compact.Output) {
	if !out.Usage.Reported {
		return
	}
	st.usage.Add(out.Usage)
	aux := st.model
	if e.cfg.Compressor != nil && e.cfg.Compressor.Model != "" {
		aux = e.cfg.Catalogue.Lookup(e.cfg.Compressor.Model)
	}
	if c, ok := aux.Cost(out.Usage); ok {
		st.costUSD += c
	}
}
