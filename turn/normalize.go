package turn

import (
	"context"
	"fmt"
	"strings"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/guard"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// normalize accounts for an answer (iteration, usage, cost, token
// accounting) and routes the ones that are not a usable answer: empty
// answers go to the empty-response guard, filtered ones to a fallback.
func (e *Engine) normalize(ctx context.Context, st *state, resp *llm.Response) verdict {
	st.res.Iterations++
	st.usedIteration()
	st.res.Usage.Add(resp.Usage)
	e.accountCall(st, resp)
	// Its cost goes to disk with the answer's row (appendRows), or on its
	// own at the next iteration when no row follows (see unsaved).
	st.acct.Observe(st.req, resp.Usage)
	// The provider proved the prompt is back well under the threshold:
	// give compression its attempts back and lift a no-progress block.
	refund := e.threshold(st).RefundLimit(st.model.Window)
	if resp.Usage.Measured() && (st.budget.Used() > 0 || st.budget.Blocked()) && resp.Usage.PromptTokens() < int64(refund) {
		st.budget.Refund()
	}

	if st.res.GraceCall {
		// The grace call offered no tools; a model that calls one anyway
		// gets its text kept and the calls dropped.
		resp.Message.ToolCalls = nil
	}
	if cut := cutCalls(resp); len(cut) > 0 && !st.res.GraceCall {
		return e.truncatedCall(ctx, st, resp, cut)
	}
	if thinkingOnlyCut(resp) {
		if len(st.fragments) > 0 {
			// A continuation that only thought: keep the answer so far.
			return e.settle(ctx, st, resp, true)
		}
		return e.reasoningExhausted(st)
	}
	text := resp.Message.Text()
	hasCalls := len(resp.Message.ToolCalls) > 0
	if strings.TrimSpace(text) != "" || hasCalls {
		st.empty.Reset()
		return proceed
	}

	switch resp.FinishReason {
	case llm.FinishContentFilter, llm.FinishRefusal:
		return e.filtered(st, resp)
	case llm.FinishLength:
		return proceed // an empty cut answer still goes through continuation
	}
	if e.cfg.Guards.NoEmptyResponse {
		return proceed
	}
	return e.emptyAnswer(ctx, st, resp)
}

// emptyAnswer routes a 200 with neither text nor tool calls through the
// empty-response guard: retry (after a tool round with a nudge, since
// resending the same tool results tends to get the same nothing), fall back
// when the empty is deterministic, or give up saying what it cost.
func (e *Engine) emptyAnswer(ctx context.Context, st *state, resp *llm.Response) verdict {
	r := e.route(st)
	cost, known := st.model.Cost(promptUsage(resp.Usage, st.estimate))
	action := st.empty.Observe(guard.EmptyAttempt{
		Provider:        r.Provider.Name(),
		Model:           r.Model,
		Finish:          resp.FinishReason,
		Usage:           resp.Usage,
		EstInputCostUSD: cost,
		CostKnown:       known && !r.Subscription,
		Included:        r.Subscription,
	})
	e.observeGuard(st, "empty_response", action.String())
	switch action {
	case guard.EmptyRetry:
		if err := e.nudgeAfterTools(ctx, st); err != nil {
			// The retry does not need the nudge: without it the same
			// request is sent again.
			e.log.Warn("could not write the empty-answer nudge", "session", st.sessionID(), "error", err)
		}
		st.hooks.emit(Guard{Guard: GuardEmptyResponse, Action: action.String(), Route: r.Name(), Attempts: st.empty.Attempts()})
		return next
	case guard.EmptyFallback:
		c := failover.Classified{Class: failover.ClassEmptyResponse, Summary: r.Name() + " keeps returning empty answers"}
		if e.fallback(st, c) {
			return restart
		}
	}
	msg := "Gave up: " + st.empty.Summary() + ". Rephrase the request, or try another model."
	if action == guard.EmptyFallback {
		msg = "Gave up: " + st.empty.Summary() + ", the same way each time with no output at all, so resending it would not help. Rephrase the request, or configure a fallback model."
	}
	st.currentRoute().Outcome = string(failover.ClassEmptyResponse)
	st.setExit(outcomeOf(failover.ClassEmptyResponse), &Failure{
		Class:     failover.ClassEmptyResponse,
		Retryable: action != guard.EmptyFallback,
		Provider:  r.Provider.Name(),
		Model:     r.Model,
		Message:   msg,
	})
	return finish
}

// promptUsage is the prompt part of an attempt's usage: as reported, or
// the preflight estimate when the provider reported none.
func promptUsage(u llm.Usage, estimate int) llm.Usage {
	if u.Measured() {
		return llm.Usage{InputTokens: u.InputTokens, CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, CacheWrite1hTokens: u.CacheWrite1hTokens}
	}
	return llm.Usage{InputTokens: int64(estimate)}
}

// nudgeAfterTools appends EmptyRetryNudge when the model answered tool
// results with nothing, so the retry asks it to go on. After a user message
// (or an earlier nudge) the request is resent as it is. The nudge is
// scaffolding: the finalizer strips it.
func (e *Engine) nudgeAfterTools(ctx context.Context, st *state) error {
	if len(st.rows) == 0 || st.rows[len(st.rows)-1].Role != llm.RoleTool {
		return nil
	}
	return e.appendRows(ctx, st, &store.Message{
		Message:   llm.NewText(llm.RoleUser, guard.EmptyRetryNudge),
		Kind:      store.RowNudge,
		Synthetic: true,
	})
}

// filtered handles an answer the provider withheld (content filter or a
// refusal with no text): another route may answer, else say so plainly.
func (e *Engine) filtered(st *state, resp *llm.Response) verdict {
	r := e.route(st)
	c := failover.Classified{
		Class:    failover.ClassContentPolicyBlocked,
		Provider: r.Provider.Name(),
		Model:    r.Model,
		Summary:  fmt.Sprintf("%s withheld its answer (%s)", r.Name(), resp.FinishReason),
	}
	if e.fallback(st, c) {
		return restart
	}
	st.currentRoute().Outcome = string(c.Class)
	st.setExit(outcomeOf(failover.ClassContentPolicyBlocked), &Failure{
		Class:    failover.ClassContentPolicyBlocked,
		Provider: r.Provider.Name(),
		Model:    r.Model,
		Message:  fmt.Sprintf("%s returned no answer (finish reason %q): its content filter or policy blocked it. Rephrase the request or use another model.", r.Name(), resp.RawFinishReason),
	})
	return finish
}
