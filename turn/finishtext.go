package turn

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/talaria-agent/talaria/guard"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/transcript"
)

// finishText handles an answer without tool calls: a truncated one is
// continued, one that announces an action it never took is nudged, and a
// final one is flushed durably at once (invariant 4) before anything else.
func (e *Engine) finishText(ctx context.Context, st *state, resp *llm.Response) verdict {
	text := resp.Message.Text()
	if resp.FinishReason == llm.FinishLength && !st.res.GraceCall {
		return e.continueTruncated(ctx, st, resp)
	}
	if e.cutAfterTools(st, resp, text) {
		// Some local servers end an answer mid-sentence with "stop" right
		// after tool results: continue it once, as if cut by the limit.
		st.midStop = true
		cut := *resp
		cut.FinishReason = llm.FinishLength
		return e.continueTruncated(ctx, st, &cut)
	}
	if len(st.fragments) > 0 {
		// The last piece of a continued answer: settle all pieces into one row.
		st.fragments = append(st.fragments, text)
		return e.settle(ctx, st, resp, false)
	}
	if !e.cfg.Guards.NoSaidButStopped && !st.res.GraceCall && st.nudges < guard.MaxContinueNudges && guard.TrailingIntent(text) {
		return e.nudge(ctx, st, resp)
	}
	e.flushFinal(ctx, st, e.answerRow(st, resp, text))
	return finish
}

// answerRow is the durable row of a final answer.
func (e *Engine) answerRow(st *state, resp *llm.Response, text string) *store.Message {
	msg := resp.Message
	msg.ToolCalls = nil
	msg.Content = []llm.Part{llm.TextPart(transcript.CleanText(text))}
	return &store.Message{
		Message:      msg,
		FinishReason: resp.FinishReason,
		Usage:        resp.Usage,
		Provider:     e.route(st).Provider.Name(),
		Model:        e.route(st).Model,
	}
}

// flushFinal writes the final answer the moment it exists. A failed flush
// does not end the turn (no side effect follows); the finalizer retries it.
func (e *Engine) flushFinal(ctx context.Context, st *state, row *store.Message) {
	st.res.FinalText = row.Text()
	if st.res.GraceCall {
		st.setExit(ExitBudgetExhausted, nil)
	} else {
		st.setExit(ExitCompleted, nil)
	}
	if err := e.appendRows(ctx, st, row); err != nil {
		e.log.Warn("final answer flush failed; the finalizer will retry", "session", st.sessionID(), "error", err)
		st.pendingFinal = row
	}
}

// continueTruncated keeps a piece of an answer cut by the output limit and
// asks for the rest, up to LengthContinuations times.
func (e *Engine) continueTruncated(ctx context.Context, st *state, resp *llm.Response) verdict {
	text := resp.Message.Text()
	st.fragments = append(st.fragments, text)
	if len(st.fragments) > e.cfg.Limits.LengthContinuations {
		return e.settle(ctx, st, resp, true)
	}
	// The piece was shown: it is made durable before asking for more.
	piece := e.answerRow(st, resp, text)
	piece.Synthetic = true
	ask := LengthContinueNudge
	if strings.TrimSpace(text) == "" {
		// An empty stub: "continue where it stopped" would only restart
		// the same oversized answer.
		ask = LengthTooLargeNudge
	}
	nudge := &store.Message{
		Message:   llm.NewText(llm.RoleUser, ask),
		Kind:      store.RowNudge,
		Synthetic: true,
	}
	if err := e.appendRows(ctx, st, piece, nudge); err != nil {
		st.setExit(ExitPersistenceFailed, persistFailure("a truncated answer", err))
		st.res.FinalText = stitch(st.fragments)
		return finish
	}
	if st.midStop && len(st.fragments) == 1 {
		e.observeGuard(st, "mid_sentence_stop", "continue")
		st.hooks.emit(Continuation{Reason: ContinueMidSentence})
	} else if ask == LengthTooLargeNudge {
		e.observeGuard(st, "length_continuation", "smaller_pieces")
		st.hooks.emit(Continuation{Reason: ContinueSmallerPieces, N: len(st.fragments), Of: e.cfg.Limits.LengthContinuations})
	} else {
		e.observeGuard(st, "length_continuation", "continue")
		st.hooks.emit(Continuation{Reason: ContinueOutputLimit, N: len(st.fragments), Of: e.cfg.Limits.LengthContinuations})
	}
	return next
}

// cutAfterTools reports a "stop" answer that ends mid-sentence right after
// tool results, the first time in a turn.
func (e *Engine) cutAfterTools(st *state, resp *llm.Response, text string) bool {
	if resp.FinishReason != llm.FinishStop || st.res.GraceCall || st.midStop || len(st.fragments) > 0 {
		return false
	}
	if len(st.rows) == 0 || st.rows[len(st.rows)-1].Role != llm.RoleTool {
		return false
	}
	return guard.CutMidSentence(text)
}

// settle replaces the pieces and nudges of a continued answer with one
// assistant row holding the stitched text, so no scaffolding stays in the
// transcript to be replayed. truncated says the ceiling was hit.
func (e *Engine) settle(ctx context.Context, st *state, resp *llm.Response, truncated bool) verdict {
	text := stitch(st.fragments)
	if err := e.deleteRows(ctx, st, continuationRows(st)); err != nil {
		e.log.Warn("could not remove continuation scaffolding", "session", st.sessionID(), "error", err)
	}
	row := e.answerRow(st, resp, text)
	if truncated {
		st.res.Truncated = true
		row.FinishReason = llm.FinishLength
		st.explanation = fmt.Sprintf("The answer hit the model's output limit %d times in a row; the partial answer is kept. Ask the model to continue, or to answer in smaller parts.",
			len(st.fragments))
	}
	e.flushFinal(ctx, st, row)
	return finish
}

// continuationRows finds this turn's length-continuation scaffolding in the
// live transcript: the stored pieces and the nudges between them. They are
// found by what they are, not by remembered IDs, because a compression
// between two continuations copies them to new rows (or a new session);
// rows of earlier turns never match, whatever a crash left behind.
func continuationRows(st *state) []int64 {
	var ids []int64
	for _, r := range st.rows {
		if r.TurnID != st.in.TurnID || !r.Synthetic {
			continue
		}
		piece := r.Role == llm.RoleAssistant && r.FinishReason == llm.FinishLength && r.Kind == store.RowNormal
		nudge := r.Role == llm.RoleUser && r.Kind == store.RowNudge &&
			(r.Text() == LengthContinueNudge || r.Text() == LengthTooLargeNudge)
		if piece || nudge {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// nudge keeps a reply that ended by announcing an action it did not take,
// and asks the model to go on (at most twice per turn). The nudge is
// scaffolding: the finalizer strips it.
func (e *Engine) nudge(ctx context.Context, st *state, resp *llm.Response) verdict {
	said := e.answerRow(st, resp, resp.Message.Text())
	n := &store.Message{
		Message:   llm.NewText(llm.RoleUser, guard.ContinueNudge),
		Kind:      store.RowNudge,
		Synthetic: true,
	}
	if err := e.appendRows(ctx, st, said, n); err != nil {
		e.flushFinal(ctx, st, said)
		return finish
	}
	st.nudges++
	e.guard(st, Guard{Guard: GuardSaidButStopped, Action: "nudge"})
	return next
}

// stitch joins pieces of a continued answer, adding a newline only where
// both sides are non-space so words are never glued together and existing
// separators are not doubled.
func stitch(parts []string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 && b.Len() > 0 && p != "" {
			last, _ := utf8.DecodeLastRuneInString(b.String())
			first, _ := utf8.DecodeRuneInString(p)
			if !unicode.IsSpace(last) && !unicode.IsSpace(first) {
				b.WriteByte('\n')
			}
		}
		b.WriteString(p)
	}
	return b.String()
}
