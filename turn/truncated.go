package turn

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/talaria-agent/talaria/failover"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// maxTruncatedCallRetries bounds how often a tool call cut by the output
// limit is asked for again before the turn fails: resending with the same
// cap gets the same cut, so the budget must never be the bound.
const maxTruncatedCallRetries = 3

// cutCalls lists the calls of an answer cut by the output limit whose
// arguments did not arrive whole.
func cutCalls(resp *llm.Response) []llm.ToolCall {
	if resp.FinishReason != llm.FinishLength {
		return nil
	}
	var cut []llm.ToolCall
	for _, c := range resp.Message.ToolCalls {
		if a := strings.TrimSpace(c.Arguments); a != "" && !json.Valid([]byte(a)) {
			cut = append(cut, c)
		}
	}
	return cut
}

// truncatedCall handles an answer whose tool call the output limit cut off.
// None of its calls runs (their arguments are a fragment) and nothing of it
// is stored. The model is told its call was cut and to make it smaller, the
// cap is raised where the model allows, and after maxTruncatedCallRetries
// the turn fails with tool_call_truncated (exit 5) saying what to do.
func (e *Engine) truncatedCall(ctx context.Context, st *state, resp *llm.Response, cut []llm.ToolCall) verdict {
	st.truncatedCalls++
	r := e.route(st)
	call := cut[0]
	asked := e.maxTokens(st)
	if st.truncatedCalls > maxTruncatedCallRetries {
		st.currentRoute().Outcome = string(failover.ClassToolCallTruncated)
		limit := "the output limit"
		if asked > 0 {
			limit = fmt.Sprintf("the output limit (max_tokens %d)", asked)
		}
		st.setExit(outcomeOf(failover.ClassToolCallTruncated), &Failure{
			Class:    failover.ClassToolCallTruncated,
			Provider: r.Provider.Name(),
			Model:    r.Model,
			Message: fmt.Sprintf("The model's %s call was cut off by %s %d times in a row, so it never ran. Raise max_tokens (or the model's max_output), or ask for the work in smaller steps (for example, write a large file in parts).",
				call.Name, limit, st.truncatedCalls),
			Detail: fmt.Sprintf("%d bytes of arguments arrived for %s", len(call.Arguments), call.Name),
		})
		return finish
	}
	raised := 0
	if ceiling := st.model.MaxOutput; ceiling > 0 {
		next := ceiling
		if asked > 0 {
			next = min(2*asked, ceiling)
		}
		if next > asked {
			st.maxTokens = next
			raised = next
		}
	}
	if !st.lastRowIs(TruncatedCallNudgePrefix) {
		nudge := &store.Message{
			Message:   llm.NewText(llm.RoleUser, truncatedCallNudge(call)),
			Kind:      store.RowNudge,
			Synthetic: true,
		}
		if err := e.appendRows(ctx, st, nudge); err != nil {
			// The retry still has the raised cap.
			e.log.Warn("could not write the truncated-call nudge", "session", st.sessionID(), "error", err)
		}
	}
	st.hooks.emit(Continuation{Reason: ContinueToolCallCut, Tool: call.Name, N: st.truncatedCalls, Of: maxTruncatedCallRetries, RaisedTo: raised})
	return next
}

// lastRowIs reports whether the newest row is scaffolding starting with prefix.
func (st *state) lastRowIs(prefix string) bool {
	if len(st.rows) == 0 {
		return false
	}
	last := &st.rows[len(st.rows)-1]
	return last.Kind == store.RowNudge && strings.HasPrefix(last.Text(), prefix)
}

// thinkingOnlyCut reports an answer the output limit stopped while the
// model was still reasoning: no visible text, no call, and reasoning (as a
// field, inline tags split out by the adapter, or counted tokens).
func thinkingOnlyCut(resp *llm.Response) bool {
	if resp.FinishReason != llm.FinishLength || len(resp.Message.ToolCalls) > 0 ||
		strings.TrimSpace(resp.Message.Text()) != "" {
		return false
	}
	return !resp.Message.Reasoning.Empty() || resp.Usage.ReasoningTokens > 0
}

// reasoningExhausted ends the turn after one call whose whole output budget
// went to reasoning: a continuation would only think more.
func (e *Engine) reasoningExhausted(st *state) verdict {
	r := e.route(st)
	limit := "max_tokens"
	if n := e.maxTokens(st); n > 0 {
		limit = fmt.Sprintf("max_tokens (%d)", n)
	}
	st.currentRoute().Outcome = string(failover.ClassReasoningExhausted)
	st.setExit(outcomeOf(failover.ClassReasoningExhausted), &Failure{
		Class:    failover.ClassReasoningExhausted,
		Provider: r.Provider.Name(),
		Model:    r.Model,
		Message: fmt.Sprintf("%s used its whole output budget, %s, on reasoning and wrote no answer; continuing would only produce more reasoning. Raise max_tokens (or the model's max_output), or lower the thinking budget or reasoning effort.",
			r.Name(), limit),
	})
	return finish
}

// largeCallBytes is the size of tool-call arguments above which a stream
// that dies inside them is taken to have died of their size: the retry then
// tells the model to split the call, instead of resending blindly.
const largeCallBytes = 4096

// cutCall is a tool call whose arguments were streaming when the
// connection died.
type cutCall struct {
	name  string
	bytes int
}

// callWatch follows the tool call being streamed, to know whether a dead
// stream died inside one.
type callWatch struct {
	name    string
	bytes   int
	inCall  bool // the last event belonged to a tool call
	started bool
}

func (w *callWatch) observe(ev llm.Event) {
	switch ev.Type {
	case llm.EventToolCallStart:
		w.name, w.bytes, w.inCall, w.started = ev.Name, 0, true, true
	case llm.EventToolCallDelta:
		w.bytes += len(ev.Text)
		w.inCall = true
	case llm.EventTextDelta, llm.EventReasoningDelta:
		w.inCall = false
	}
}

// cut returns the call a dead stream died inside, when it was large.
func (w *callWatch) cut() *cutCall {
	if !w.started || !w.inCall || w.bytes < largeCallBytes {
		return nil
	}
	return &cutCall{name: w.name, bytes: w.bytes}
}

// noteCutCall adds, before the retry of a stream that died inside a large
// tool call, a note telling the model its call was too large to arrive and
// to split it. The note is scaffolding, stripped by the finalizer.
func (e *Engine) noteCutCall(ctx context.Context, st *state) {
	c := st.cutCall
	st.cutCall = nil
	if c == nil || st.lastRowIs(CutInTransitNudgePrefix) {
		return
	}
	nudge := &store.Message{
		Message:   llm.NewText(llm.RoleUser, cutInTransitNudge(c.name, c.bytes)),
		Kind:      store.RowNudge,
		Synthetic: true,
	}
	if err := e.appendRows(ctx, st, nudge); err != nil {
		e.log.Warn("could not write the cut-call note", "session", st.sessionID(), "error", err)
		return
	}
	e.assemble(st)
}
