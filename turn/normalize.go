package turn

import (
	"context"
	"fmt"
	"strings"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/guard"
	"github.com/talaria-agent/talaria/llm"
)

// normalize accounts for an answer (iteration, usage, cost, token
// accounting) and routes the ones that are not a usable answer: empty
// answers go to the empty-response guard, filtered ones to a fallback.
func (e *Engine) normalize(ctx context.Context, st *state, resp *llm.Response) verdict {
	st.iterations++
	st.usage.Add(resp.Usage)
	if cost, ok := st.model.Cost(resp.Usage); ok {
		st.costUSD += cost
	} else {
		st.costKnown = false
	}
	st.acct.Observe(st.req, resp.Usage)
	// The provider proved the prompt is back well under the threshold:
	// give compression its attempts back and lift a no-progress block.
	refund := e.cfg.Threshold.RefundLimit(st.model.Window)
	if resp.Usage.Reported && (st.budget.Used() > 0 || st.budget.Blocked()) && resp.Usage.PromptTokens() < int64(refund) {
		st.budget.Refund()
	}

	if st.graceCall {
		// The grace call offered no tools; a model that calls one anyway
		// gets its text kept and the calls dropped.
		resp.Message.ToolCalls = nil
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
	if !e.cfg.Guards.EmptyResponse {
		return proceed
	}
	r := e.route(st)
	cost, known := st.model.Cost(llm.Usage{InputTokens: int64(st.estimate)})
	switch st.empty.Observe(guard.EmptyAttempt{
		Provider:        r.Provider.Name(),
		Model:           r.Model,
		Finish:          resp.FinishReason,
		Usage:           resp.Usage,
		EstInputCostUSD: cost,
		CostKnown:       known,
	}) {
	case guard.EmptyRetry:
		st.hooks.status(fmt.Sprintf("%s returned an empty answer; retrying (%d so far)", r.Name(), st.empty.Attempts()))
		return next
	case guard.EmptyFallback:
		c := failover.Classified{Class: "empty_response", Summary: r.Name() + " keeps returning empty answers"}
		if e.fallback(st, c) {
			return restart
		}
	}
	st.currentRoute().Outcome = "empty_response"
	st.setExit(ExitFailed, &Failure{
		Reason:    "empty_response",
		Retryable: true,
		Provider:  r.Provider.Name(),
		Model:     r.Model,
		Message:   "Gave up: " + st.empty.Summary() + ". Rephrase the request, or try another model.",
	})
	return finish
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
	st.setExit(ExitFailed, &Failure{
		Reason:   string(failover.ClassContentPolicyBlocked),
		Provider: r.Provider.Name(),
		Model:    r.Model,
		Message:  fmt.Sprintf("%s returned no answer (finish reason %q): its content filter or policy blocked it. Rephrase the request or use another model.", r.Name(), resp.RawFinishReason),
	})
	return finish
}
