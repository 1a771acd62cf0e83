package turn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/transcript"
)

// toolRound makes the assistant's tool calls durable before any of them
// runs (invariant 2), runs them — consecutive read-only calls in parallel,
// others one at a time after approval — and appends each result durably as
// it completes, in call order (invariant 3). Every call gets exactly one
// result: an interrupt or an early stop pairs the rest with a marker.
func (e *Engine) toolRound(ctx context.Context, st *state, resp *llm.Response) verdict {
	msg := resp.Message
	msg.ToolCalls = uniqueCallIDs(msg.ToolCalls, st)
	row := &store.Message{
		Message:      msg,
		FinishReason: resp.FinishReason,
		Usage:        resp.Usage,
		Provider:     e.route(st).Provider.Name(),
		Model:        e.route(st).Model,
	}
	if err := e.appendRows(ctx, st, row); err != nil {
		// No side effect may run for calls that are not on disk.
		st.setExit(ExitPersistenceFailed, persistFailure("the assistant's tool calls (no tool was run)", err))
		return finish
	}
	st.res.ToolRounds++
	// A plan the round changed is stored after its results.
	defer e.saveTodo(ctx, st)
	calls := msg.ToolCalls
	st.res.ToolCalls += len(calls)

	for i := 0; i < len(calls); {
		j := i + 1
		if e.readOnly(calls[i]) {
			for j < len(calls) && e.readOnly(calls[j]) {
				j++
			}
		}
		if ctx.Err() != nil || st.res.Exit != "" {
			break
		}
		outs := e.runGroup(ctx, st, calls[i:j])
		for k, out := range outs {
			if v := e.recordResult(ctx, st, calls[i+k], out); v == finish {
				e.pairRest(ctx, st, calls[i+k+1:], pairText(st.res.Exit))
				return finish
			}
		}
		i = j
	}
	if ctx.Err() != nil {
		e.interrupted(ctx, st)
	}
	if st.res.Exit != "" {
		e.pairRest(ctx, st, unanswered(st, calls), pairText(st.res.Exit))
		return finish
	}
	return next
}

// toolOutcome is one finished call.
type toolOutcome struct {
	res      tool.Result
	panicked any
	took     time.Duration
	ran      bool // false: refused or invalid before running
	// rec is the call's ledger record (nil: no ledger); ledgerErr says its
	// start could not be recorded, so the call did not run.
	rec       *store.ToolCallRecord
	ledgerErr error
}

func (e *Engine) readOnly(c llm.ToolCall) bool {
	info, ok := e.cfg.Tools.Info(c.Name)
	return ok && info.ReadOnly
}

// runGroup runs one call, or several read-only calls in parallel (bounded).
func (e *Engine) runGroup(ctx context.Context, st *state, calls []llm.ToolCall) []toolOutcome {
	outs := make([]toolOutcome, len(calls))
	if len(calls) == 1 {
		outs[0] = e.runTool(ctx, st, calls[0])
		return outs
	}
	sem := make(chan struct{}, e.cfg.Limits.ToolConcurrency)
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			outs[i] = e.runTool(ctx, st, c)
		}()
	}
	wg.Wait()
	return outs
}

// runTool validates, approves and runs one call. A tool's panic is caught
// here so its call is still paired; the turn then ends ExitPanic.
// Every call is shown (ToolStart/ToolEnd), refused and invalid ones too, so
// a person sees what the model asked for and why it did not run.
func (e *Engine) runTool(ctx context.Context, st *state, c llm.ToolCall) (out toolOutcome) {
	st.hooks.toolStart(c)
	e.observeTool(st, c, nil, 0)
	start := time.Now()
	defer func() {
		out.took = time.Since(start)
		if p := recover(); p != nil {
			e.log.Error("tool panicked", "tool", c.Name, "panic", p, "stack", string(debug.Stack()))
			out.panicked = p
			out.res = tool.Result{Content: fmt.Sprintf("[error: the tool %s crashed: %v]", c.Name, p), IsError: true}
		}
		st.hooks.toolEnd(c, out.res, out.took)
		e.observeTool(st, c, &out.res, out.took)
	}()
	args, err := e.cfg.Tools.Validate(c.Name, c.Arguments)
	if err != nil {
		return toolOutcome{res: tool.Result{Content: err.Error(), IsError: true}}
	}
	t, _ := e.cfg.Tools.Get(c.Name)
	info := t.Info()
	cr, perCall := t.(tool.CallReader)
	if !info.ReadOnly && !info.AutoApprove && e.cfg.Approver != nil && (!perCall || !cr.ReadOnlyCall(args)) {
		if ok, reason := e.cfg.Approver.Approve(ctx, c, info); !ok {
			if reason == "" {
				reason = "The user did not approve this call of " + c.Name + "; do not retry it unchanged."
			}
			return toolOutcome{res: tool.Result{Content: reason, IsError: true}}
		}
	}
	rec, err := e.ledgerStart(ctx, st, c, t, args)
	if err != nil {
		return toolOutcome{res: tool.Result{Content: "[not run: the call could not be recorded as started: " + err.Error() + "]", IsError: true},
			ledgerErr: err}
	}
	out.ran, out.rec = true, rec
	if st.obs != nil {
		ctx = e.toolContext(ctx, st, c)
	}
	ctx, todoDone := e.todoContext(ctx, st, c)
	res, err := t.Run(context.WithValue(ctx, callKey{}, c), args)
	todoDone()
	if err != nil {
		res = tool.Result{Content: err.Error(), IsError: true}
	}
	out.res = cutShort(ctx, c, info, rec, res)
	return out
}

// cutShort is the result of a call that changes things and was stopped by
// an interrupt (Ctrl+C) while it ran: what the tool returned, then the
// ledger's verdict, by the same rules a continued turn uses for a call its
// dead process left unfinished (effectVerdict), so the next turn's model
// is told whether it took effect. Other results pass through.
func cutShort(ctx context.Context, c llm.ToolCall, info tool.Info, rec *store.ToolCallRecord, res tool.Result) tool.Result {
	if rec == nil || ctx.Err() == nil || info.ReadOnly || info.Idempotent || errors.Is(context.Cause(ctx), ErrLeaseLost) {
		return res
	}
	res.IsError = true
	res.Content = strings.TrimRight(res.Content, "\n") + "\n[interrupted: this " + c.Name + " call was stopped while it ran." + effectVerdict(*rec) + "]"
	return res
}

// recordResult applies the identical-call guard and appends the result.
func (e *Engine) recordResult(ctx context.Context, st *state, c llm.ToolCall, out toolOutcome) verdict {
	if errors.Is(out.ledgerErr, store.ErrLeaseLost) {
		ledgerRefused(st, out.ledgerErr) // no row can be written any more
		return finish
	}
	content := transcript.CleanText(out.res.Content)
	stop := false
	mayStop := st.in.Unattended && e.cfg.Guards.ToolLoopStop > 0
	// Refused and invalid calls count too: the same bad call repeated is
	// the same loop. A panic ends the turn anyway.
	if out.panicked == nil && (!e.cfg.Guards.NoIdenticalCalls || mayStop) {
		info, _ := e.cfg.Tools.Info(c.Name)
		// Observed on the clean result before the notice is appended, so
		// the notice's changing count cannot break the match.
		count, notice := st.streak.Observe(c.Name, c.Arguments, content, info.Repeatable)
		if notice != "" && !e.cfg.Guards.NoIdenticalCalls {
			content += "\n" + notice
			e.observeGuard(st, "identical_calls", "notice")
		}
		stop = mayStop && count >= e.cfg.Guards.ToolLoopStop
		if stop {
			e.observeGuard(st, "tool_loop", "stop_turn")
		}
	}
	row := &store.Message{Message: llm.NewToolResult(c, content, out.res.IsError)}
	for _, img := range out.res.Images {
		if img.Type == llm.PartImage {
			row.Content = append(row.Content, img)
		}
	}
	if err := e.appendRows(ctx, st, row); err != nil {
		st.setExit(ExitPersistenceFailed, persistFailure("a tool result", err))
		return finish
	}
	if out.ledgerErr != nil {
		ledgerRefused(st, out.ledgerErr)
		return finish
	}
	e.ledgerFinish(ctx, st, out.rec, row)
	if out.panicked != nil {
		st.setExit(ExitPanic, &Failure{
			Message: fmt.Sprintf("The tool %s crashed (%v); the turn stopped, the session is intact and the next turn can run.", c.Name, out.panicked),
		})
		return finish
	}
	if stop {
		st.setExit(ExitToolLoop, &Failure{
			Message: fmt.Sprintf("Stopped: the model called %s with the same arguments and got the same result %d times in a row. Rephrase the task or check why the call does not make progress.",
				c.Name, e.cfg.Guards.ToolLoopStop),
		})
		return finish
	}
	return proceed
}

// pairRest gives every call in calls a marker result so no call dangles.
func (e *Engine) pairRest(ctx context.Context, st *state, calls []llm.ToolCall, text string) {
	if len(calls) == 0 || st.res.Exit == ExitLeaseLost {
		return
	}
	rows := make([]*store.Message, len(calls))
	for i, c := range calls {
		rows[i] = &store.Message{Message: llm.NewToolResult(c, text, true), Synthetic: true}
	}
	if err := e.appendRows(ctx, st, rows...); err != nil {
		// Loading the session repairs orphan calls, so nothing is lost.
		e.log.Warn("could not pair unfinished tool calls", "session", st.sessionID(), "error", err)
	}
}

// unanswered lists calls of the round with no result row yet.
func unanswered(st *state, calls []llm.ToolCall) []llm.ToolCall {
	answered := map[string]bool{}
	for i := len(st.rows) - 1; i >= 0 && st.rows[i].Role == llm.RoleTool; i-- {
		answered[st.rows[i].ToolCallID] = true
	}
	return notAnswered(calls, answered)
}

// notAnswered is calls less those whose ID answered holds.
func notAnswered(calls []llm.ToolCall, answered map[string]bool) []llm.ToolCall {
	var out []llm.ToolCall
	for _, c := range calls {
		if !answered[c.ID] {
			out = append(out, c)
		}
	}
	return out
}

func pairText(x Exit) string {
	switch x {
	case ExitInterrupted:
		return InterruptedToolResult
	case ExitToolLoop:
		return LoopStoppedToolResult
	}
	return SkippedToolResult
}

// uniqueCallIDs gives calls without an id, or with an id already used in
// this session, a fresh one, so results pair unambiguously.
//
// Every id it looks up starts with a call's id, or with the fresh ids'
// base when a call has none, so only the session's ids with such a prefix
// are collected: a map of a few entries rather than of every call in the
// session (12,500 at 50,000 messages, rebuilt on every tool round).
func uniqueCallIDs(calls []llm.ToolCall, st *state) []llm.ToolCall {
	fresh := "call_" + st.in.TurnID
	relevant := func(id string) bool {
		for _, c := range calls {
			if strings.HasPrefix(id, cmp.Or(c.ID, fresh)) {
				return true
			}
		}
		return false
	}
	seen := map[string]bool{}
	for i := range st.rows {
		for _, c := range st.rows[i].ToolCalls {
			if relevant(c.ID) {
				seen[c.ID] = true
			}
		}
	}
	out := make([]llm.ToolCall, len(calls))
	for i, c := range calls {
		if c.ID == "" || seen[c.ID] {
			base := cmp.Or(c.ID, fresh)
			for n := i + 1; ; n++ {
				id := base + "_" + strconv.Itoa(n)
				if !seen[id] {
					c.ID = id
					break
				}
			}
		}
		seen[c.ID] = true
		out[i] = c
	}
	return out
}
