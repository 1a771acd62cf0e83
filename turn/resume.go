package turn

import (
	"context"
	"fmt"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
)

// resume continues a turn whose process died (Input.Resume) from its last
// durable point, under this process's fence:
//
//   - the turn's stored answer ends it (it finished; only its process's
//     bookkeeping was lost);
//   - an assistant row whose calls lack results is a tool round cut off:
//     it is finished here through the ledger (finishRound), then the loop
//     goes on;
//   - anything else (the user's row, a tool result, a notice) means a model
//     call was pending: the loop makes it again.
//
// The iterations the turn's stored answers used count against its budget:
// a continued turn does not get a fresh one.
func (e *Engine) resume(ctx context.Context, st *state) verdict {
	if st.in.Handoff != nil {
		st.hooks.Emit(*st.in.Handoff)
	}
	first := -1
	for i := range st.rows {
		if st.rows[i].TurnID == st.in.TurnID && st.rows[i].SessionID == st.sessionID() {
			first = i
			break
		}
	}
	if first < 0 {
		st.setExit(ExitSessionFailed, &Failure{
			Message: "This turn cannot be continued: none of its rows is stored in the session. Send the message again."})
		return finish
	}
	last := -1
	for i := first; i < len(st.rows); i++ {
		r := &st.rows[i]
		if r.TurnID != st.in.TurnID || r.Archived || r.Kind.DisplayOnly() {
			continue
		}
		last = i
		if r.Role == llm.RoleAssistant && !r.Synthetic && r.Kind == store.RowNormal {
			st.res.Iterations++
		}
	}
	if last < 0 {
		return proceed
	}
	r := &st.rows[last]
	switch {
	case r.Role == llm.RoleAssistant && len(r.ToolCalls) > 0:
		return e.finishRound(ctx, st, r.ToolCalls)
	case r.Role == llm.RoleTool:
		// Results follow their calls: find the round they belong to.
		for i := last; i >= first; i-- {
			if a := &st.rows[i]; a.Role == llm.RoleAssistant && len(a.ToolCalls) > 0 {
				return e.finishRound(ctx, st, a.ToolCalls)
			}
		}
	case r.Role == llm.RoleAssistant && !r.Synthetic && r.Kind == store.RowNormal:
		// The answer was stored: the turn had ended.
		st.res.FinalText = r.Text()
		st.setExit(ExitCompleted, nil)
		return finish
	}
	return proceed
}

// finishRound finishes a tool round cut off by its process's death. A call
// with a stored result is never run again. For one without: never started
// (no ledger record) means it never ran, so it runs now; started but not
// finished, a read-only or idempotent tool runs again, and a tool that
// changes things is not re-run blindly — its result says it may or may not
// have taken effect (for a file it changes, which state the file is in).
func (e *Engine) finishRound(ctx context.Context, st *state, calls []llm.ToolCall) verdict {
	answered := map[string]bool{}
	for i := range st.rows {
		if st.rows[i].Role == llm.RoleTool {
			answered[st.rows[i].ToolCallID] = true
		}
	}
	var recs map[string]store.ToolCallRecord
	if e.cfg.Ledger != nil {
		dctx, cancel := durable(ctx)
		list, err := e.cfg.Ledger.ToolCalls(dctx, st.sessionID(), st.in.TurnID)
		cancel()
		if err != nil {
			st.setExit(ExitPersistenceFailed, persistFailure("the tool-call ledger (reading it to continue the turn; no tool was run)", err))
			return finish
		}
		recs = make(map[string]store.ToolCallRecord, len(list))
		for _, r := range list {
			recs[r.CallID] = r
		}
	}
	for i, c := range calls {
		if answered[c.ID] {
			continue
		}
		if ctx.Err() != nil || st.res.Exit != "" {
			e.interrupted(ctx, st)
			e.pairRest(ctx, st, unansweredOf(st, calls[i:]), pairText(st.res.Exit))
			return finish
		}
		var out toolOutcome
		rec, started := recs[c.ID]
		info, _ := e.cfg.Tools.Info(c.Name)
		if !started || info.ReadOnly || info.Idempotent {
			out = e.runTool(ctx, st, c)
		} else {
			out = toolOutcome{res: tool.Result{Content: uncertainResult(c, rec), IsError: true}, rec: &rec}
			st.hooks.toolStart(c)
			st.hooks.toolEnd(c, out.res, 0)
		}
		if e.recordResult(ctx, st, c, out) == finish {
			e.pairRest(ctx, st, unansweredOf(st, calls[i+1:]), pairText(st.res.Exit))
			return finish
		}
	}
	return proceed
}

// unansweredOf is calls less those with a stored result.
func unansweredOf(st *state, calls []llm.ToolCall) []llm.ToolCall {
	answered := map[string]bool{}
	for i := range st.rows {
		if st.rows[i].Role == llm.RoleTool {
			answered[st.rows[i].ToolCallID] = true
		}
	}
	return notAnswered(calls, answered)
}

// uncertainResult is the result given to a call that changes things and
// was cut off while it ran: it was not run again.
func uncertainResult(c llm.ToolCall, rec store.ToolCallRecord) string {
	head := fmt.Sprintf("[handoff: the node running this %s call stopped before it finished (node %s); it was not run again.", c.Name, rec.Node)
	return head + effectVerdict(rec) + "]"
}

// effectVerdict says whether a call that changes things and was cut off
// while it ran took effect, as far as its ledger record tells: for a file
// it changes, by the file's hash now against the one before the call.
func effectVerdict(rec store.ToolCallRecord) string {
	if rec.Path == "" || rec.BeforeHash == "" {
		return " It may or may not have taken effect: check its effect before calling it again."
	}
	now := FileHash(rec.Path)
	switch {
	case now == "":
		return " The file " + rec.Path + " cannot be read now, so whether the call took effect is unknown: check it before calling it again."
	case now == rec.BeforeHash:
		return " The file " + rec.Path + " is exactly as it was before the call: the call did not take effect. Call it again if it is still needed."
	case now == store.HashAbsent:
		return " The file " + rec.Path + " does not exist now, though it did before the call: check what happened before calling it again."
	}
	return " The file " + rec.Path + " changed after the call started: the call most likely took effect. Read the file to check before calling it again."
}
