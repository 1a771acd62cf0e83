package gateway

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// Approve implements turn.Approver for turns the gateway runs: it emits
// approval_required and waits for an answer over the API. No answer within
// ApprovalTimeout is a refusal the model is told about.
func (g *Gateway) Approve(ctx context.Context, call llm.ToolCall, info tool.Info) (bool, string) {
	run := runFrom(ctx)
	if run == nil {
		return false, "Refused: no one can approve this call of " + call.Name + "."
	}
	st := g.state(run.sessionID)
	st.mu.Lock()
	always := st.always[call.Name]
	st.mu.Unlock()
	if always {
		return true, ""
	}
	ch := make(chan api.ApprovalAnswer, 1)
	run.mu.Lock()
	run.approvals[call.ID] = ch
	run.mu.Unlock()
	defer func() {
		run.mu.Lock()
		delete(run.approvals, call.ID)
		run.mu.Unlock()
	}()
	h, herr := g.hubs.get(ctx, run.sessionID)
	publish := func(typ EventType, f map[string]any) {
		if herr == nil {
			h.publish(typ, run.id, f)
		}
	}
	timeout := g.cfg.ApprovalTimeout
	if herr == nil {
		h.publishData(api.EventApprovalRequired, run.id, encodeUpdate(api.EventApprovalRequired, run.id, turn.ApprovalRequired{
			CallID: call.ID, Name: call.Name, Arguments: call.Arguments, TimeoutMS: timeout.Milliseconds(), Description: info.Description}))
	}
	g.m.approval("asked")
	t := time.NewTimer(timeout)
	defer t.Stop()
	var d api.ApprovalAnswer
	by := "user"
	select {
	case d = <-ch:
	case <-t.C:
		by = "timeout"
		d = api.ApprovalAnswer{Decision: api.DecisionDeny, Reason: fmt.Sprintf(
			"Refused: no one approved this call of %s within %s, so it did not run. Do not retry it unchanged; tell the user what you wanted to do and why.",
			call.Name, timeout)}
	case <-ctx.Done():
		by = "interrupt"
		d = api.ApprovalAnswer{Decision: api.DecisionDeny, Reason: refusedInterrupted}
	}
	publish(api.EventApprovalResolved, map[string]any{"call_id": call.ID, "name": call.Name, "decision": d.Decision, "by": by})
	g.m.approval(string(d.Decision) + "_" + by)
	switch d.Decision {
	case api.DecisionAlways:
		st.mu.Lock()
		st.always[call.Name] = true
		st.mu.Unlock()
		return true, ""
	case api.DecisionAllow:
		return true, ""
	}
	if d.Reason == "" {
		d.Reason = "Refused: the user did not approve this call of " + call.Name + "; do not retry it unchanged."
	}
	return false, d.Reason
}

// refusedInterrupted is what the model reads of a call whose approval the
// turn's interruption cut short.
const refusedInterrupted = "Refused: the turn was interrupted while waiting for approval."

// answer delivers a decision to a waiting approval.
func (g *Gateway) answer(ctx context.Context, turnID, callID, principal string, d api.ApprovalAnswer) error {
	switch d.Decision {
	case api.DecisionAllow, api.DecisionDeny, api.DecisionAlways:
	default:
		return errf(http.StatusBadRequest, api.CodeBadRequest, `decision must be "allow", "deny" or "always"`)
	}
	run, err := g.runningTurn(ctx, turnID, principal)
	if err != nil {
		return err
	}
	run.mu.Lock()
	ch, ok := run.approvals[callID]
	if ok {
		delete(run.approvals, callID)
	}
	run.mu.Unlock()
	if !ok {
		return errf(http.StatusNotFound, api.CodeNoApproval, "turn "+turnID+" is not waiting for an approval of call "+callID)
	}
	ch <- d
	return nil
}

// runningTurn finds a running turn the principal may see.
func (g *Gateway) runningTurn(ctx context.Context, turnID, principal string) (*turnRun, error) {
	g.mu.Lock()
	ref, ok := g.turns[turnID]
	var run *turnRun
	var ref2 turnRef
	if ok {
		run, ref2 = ref.run, *ref
	}
	g.mu.Unlock()
	ref = &ref2
	if ok && ref.principal == "" {
		if sess, err := g.store.GetSession(ctx, ref.sessionID); err != nil || sess.Principal != principal {
			ok = false
		}
	} else if ok && ref.principal != principal {
		ok = false
	}
	if !ok {
		return nil, errf(http.StatusNotFound, api.CodeNotFound, "no running turn "+turnID)
	}
	if run == nil {
		return nil, errf(http.StatusConflict, api.CodeNotRunning, "turn "+turnID+" is queued, not running")
	}
	return run, nil
}
