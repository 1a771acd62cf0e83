package turn

import (
	"context"
	"errors"
	"fmt"

	"github.com/talaria-agent/talaria/compact"
	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/store"
)

// Rotator continues a session in a child session: it creates the child
// (ParentID = the turn's session, same system prompt), stores rows there
// as its first transcript, ends the parent with store.EndCompression and
// moves the turn's lease to the child. It returns the child and the fence
// the turn writes with from then on. The agent implements it, since it
// owns the lease; a nil Input.Rotator compresses in place.
type Rotator interface {
	Rotate(ctx context.Context, rows []*store.Message) (*store.Session, store.Fence, error)
}

// preflight runs before every API call: tool results, compression and a
// fallback switch all change the request size or the window. When the
// request would pass the threshold it compresses first and restarts the
// iteration (refunded: nothing reached a provider).
func (e *Engine) preflight(ctx context.Context, st *state) verdict {
	st.estimate = st.acct.Estimate(st.req)
	limit := e.threshold(st).Limit(st.model.Window)
	e.checkPressure(st, e.cfg.Compressor == nil || !st.budget.Allow())
	if st.estimate <= limit || e.cfg.Compressor == nil || !st.budget.Allow() {
		// Over the threshold with no attempts left, the request still goes:
		// the threshold is a fraction of the window, and a real overflow
		// comes back as an error the retry loop handles.
		return proceed
	}
	st.hooks.emit(Compression{Step: CompressThreshold, Tokens: st.estimate, Threshold: limit, Model: e.route(st).Model})
	return e.compress(ctx, st, limit, false)
}

// threshold is the compression trigger of the model in use: its own
// (catalogue override) or the configured one.
func (e *Engine) threshold(st *state) compact.Threshold {
	return e.cfg.Threshold.For(st.model)
}

// implausibleOverflowRatio bounds how far a provider's reported prompt
// size may exceed the request's own estimate and still be believed:
// estimates miss by tokenizer and image differences, not by 8x.
const implausibleOverflowRatio = 8

// recoverOverflow handles a provider's "context too long" (or 413): it
// compresses and restarts the iteration while attempts remain, and ends
// the turn compression_exhausted, saying why, instead of looping.
func (e *Engine) recoverOverflow(ctx context.Context, st *state, c failover.Classified) verdict {
	o := compact.ParseOverflow(c.ProviderMessage)
	if o.Limit > 0 && o.Limit < st.model.Window {
		// The provider enforces a smaller window than the catalogue says (a
		// local server's configured context, a guessed unknown model):
		// believe it for the rest of the turn, so preflight measures
		// against what is enforced.
		st.model.Window = o.Limit
	}
	// The request that overflowed proves what does not fit, whatever the
	// estimate said: aim at half of it, or at the threshold when that is
	// lower, so every pass has to make real progress.
	actual := o.Actual
	if st.estimate > 0 && actual > implausibleOverflowRatio*st.estimate {
		// A count far above the request's own size is a provider's
		// mistake (a window reported as the usage, a relay's own total):
		// scaling every message by it would leave nothing that fits, even
		// the messages a pass must keep. Compress by the request's size.
		e.log.Info("provider's overflow token count is implausible; using the estimate",
			"session", st.sessionID(), "reported", actual, "estimate", st.estimate)
		actual = 0
	}
	measured := max(st.estimate, actual)
	target := min(e.threshold(st).Limit(st.model.Window), measured/2)
	if e.cfg.Compressor != nil && st.budget.Allow() {
		st.estimate = measured
		st.hooks.emit(Compression{Step: CompressOverflow, Summary: c.Summary})
		switch e.compress(ctx, st, target, true) {
		case restart:
			return restart
		case finish:
			return finish
		}
	}
	if e.cfg.Compressor != nil && !st.emergency {
		// The provider insists and normal passes gain nothing: they keep
		// the head and the tail word for word. Shrink what they protect.
		st.emergency = true
		st.estimate = measured
		st.hooks.emit(Compression{Step: CompressEmergency, Summary: c.Summary})
		switch e.emergencyCompress(ctx, st, target) {
		case restart:
			return restart
		case finish:
			return finish
		}
	}
	r := e.route(st)
	st.currentRoute().Outcome = string(c.Class)
	var why string
	switch {
	case e.cfg.Compressor == nil:
		why = "compression is disabled"
	case st.budget.Blocked():
		why = fmt.Sprintf("compressing it made no further progress (%d pass(es) this turn)", st.budget.Used())
	default:
		why = fmt.Sprintf("%d compression passes this turn did not make it fit", st.budget.Used())
	}
	if st.emergency {
		why += ", and an emergency pass that kept only your latest message and the newest tool call and result (cut to a head and tail) still did not fit"
	}
	st.setExit(ExitCompressionExhausted, &Failure{
		Class:    c.Class,
		Provider: r.Provider.Name(),
		Model:    r.Model,
		Status:   c.Status,
		Message: fmt.Sprintf("The conversation no longer fits %s's context window and %s. Your history is kept: start a new session, compress the conversation, or use a model with a larger window.",
			r.Model, why),
		Detail: c.ProviderMessage,
	})
	return finish
}

// compress runs one compression pass and makes its result the durable,
// live transcript: in place (store.Replace archives the old rows), or in
// a child session when the turn has a Rotator. It returns restart when the
// transcript changed, proceed when the pass made no progress (further
// passes are then blocked this turn), and finish when compression failed.
func (e *Engine) compress(ctx context.Context, st *state, target int, force bool) (v verdict) {
	st.budget.Spend()
	var out compact.Output
	var err error
	if st.obs != nil {
		defer e.observeCompression(st, e.cfg.Now(), st.res.CostUSD, &out, &err, &v)
	}
	out, err = e.compressPass(ctx, st, compact.Input{
		System:   st.live.session.SystemPrompt,
		Tools:    st.req.Tools,
		Rows:     st.rows,
		Target:   target,
		Measured: st.estimate,
		Force:    force,
	})
	switch {
	case errors.Is(err, compact.ErrUnderTarget):
		return proceed
	case errors.Is(err, compact.ErrNoProgress), errors.Is(err, compact.ErrNothingToCompress):
		st.budget.Block()
		st.hooks.emit(Compression{Step: CompressNoProgress})
		return proceed
	case err != nil:
		if e.interrupted(ctx, st) {
			return finish
		}
		st.setExit(ExitCompressionFailed, &Failure{
			Retryable: true,
			Provider:  e.route(st).Provider.Name(),
			Model:     e.route(st).Model,
			Message:   "The conversation is too long for the model and summarizing it failed; your history is kept. Retrying can help.",
			Detail:    err.Error(),
		})
		return finish
	}
	return e.useCompressed(ctx, st, out)
}

// useCompressed makes a pass's rows the durable, live transcript and
// restarts the iteration.
func (e *Engine) useCompressed(ctx context.Context, st *state, out compact.Output) verdict {
	out = carryTodo(st.rows, out)
	at, rows, err := e.persistCompressed(ctx, st.live, st.lastSeq(), out, st.in.TurnID, st.in.Rotator)
	if err != nil {
		st.setExit(ExitPersistenceFailed, persistFailure("the compressed history", err))
		return finish
	}
	var rotated string
	if at.session != st.live.session {
		// The turn moved to the child session with its lease.
		st.live = at
		rotated = at.session.ID
	}
	st.rows = st.rows[:0]
	for _, r := range rows {
		st.rows = append(st.rows, *r)
	}
	// The reported count described the old prefix; and a new prefix is a
	// declared cache boundary.
	st.acct.Reset()
	// A new prefix is a new request: empties before it say nothing about
	// what the compressed one will get, so the streak starts over.
	st.empty.Reset()
	st.res.Compactions++
	st.hooks.emit(Compression{Step: CompressDone, Before: out.Before, After: out.After, Summarized: out.Summarized,
		SummaryFailed: out.SummaryFailed, RotatedTo: rotated})
	return restart
}

// emergencyCompress runs the emergency pass (compact.Input.Emergency). It
// does not spend or block the compression budget: it runs once per turn,
// after the normal passes. A result still over target is used when it fits
// the window, since the threshold is only a fraction of it.
func (e *Engine) emergencyCompress(ctx context.Context, st *state, target int) verdict {
	out, err := e.compressPass(ctx, st, compact.Input{
		System:    st.live.session.SystemPrompt,
		Tools:     st.req.Tools,
		Rows:      st.rows,
		Target:    target,
		Measured:  st.estimate,
		Emergency: true,
	})
	switch {
	case errors.Is(err, compact.ErrCannotFit) && out.Rows != nil && out.After < st.model.Window:
	case err != nil && ctx.Err() != nil:
		e.interrupted(ctx, st)
		return finish
	case err != nil:
		e.log.Info("emergency compression could not make the conversation fit", "session", st.sessionID(), "error", err)
		return proceed
	}
	return e.useCompressed(ctx, st, out)
}

// compressPass runs one compression pass (compressRows) and counts the
// summary call's tokens and cost in the turn.
func (e *Engine) compressPass(ctx context.Context, st *state, in compact.Input) (compact.Output, error) {
	out, cost, known, err := e.compressRows(ctx, st.model, in)
	if out.Usage.Reported {
		st.res.Usage.Add(out.Usage)
		if known {
			st.res.CostUSD += cost
		}
	}
	return out, err
}
