package compact

import (
	"context"
	"errors"
	"fmt"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// ErrCannotFit is returned by an emergency pass (Input.Emergency) when even
// the smallest transcript it can make does not fit Target; Output still
// says how small it got.
var ErrCannotFit = errors.New("compact: the protected messages alone do not fit")

// TruncatedMarker marks the middle of a tool result an emergency pass cut.
const TruncatedMarker = "[… tool output truncated to fit the context window …]"

// minKeepBytes is the least an emergency pass leaves of a tool result.
const minKeepBytes = 400

// emergency is the pass for a provider that still says the context is too
// long after normal passes found nothing to shrink: it keeps only the latest
// real user message and the newest tool call with its results, summarizes
// (or, if the summary fails, replaces with a placeholder) everything else,
// and cuts the kept tool results to a head and a tail with a marker until
// the transcript fits Target. The system prompt travels outside Rows and is
// always kept.
func (c *Compressor) emergency(ctx context.Context, in Input) (Output, error) {
	s := c.settings()
	rows := make([]store.Message, len(in.Rows))
	before := requestOverhead + EstimateSystem(in.System) + EstimateTools(in.Tools)
	for i := range in.Rows {
		rows[i] = copyRow(in.Rows[i])
		before += rowCost(&rows[i])
	}
	u := in.units(before)
	target, report := u.own(in.Target), u.report
	out := Output{Before: report(before), After: report(before)}

	keep := emergencyKeep(rows)
	var removed []store.Message
	var removedAfterUser bool
	user := -1
	for i := range rows {
		switch {
		case keep[i] && rows[i].Role == llm.RoleUser:
			user = i
		case !keep[i] && !rows[i].Kind.DisplayOnly():
			removed = append(removed, in.Rows[i])
			removedAfterUser = removedAfterUser || user >= 0
		}
	}

	var sum *store.Message
	if len(removed) > 0 {
		body, usage, err := c.summarize(ctx, removed, s)
		out.Usage = usage
		if err != nil {
			if ctx.Err() != nil {
				return Output{Before: out.Before, After: out.Before}, fmt.Errorf("compact: %w", ctx.Err())
			}
			// An emergency does not abort on a failed summary: the
			// alternative is a turn that cannot go on at all.
			body = placeholderBody(len(removed))
			out.SummaryFailed = true
		}
		r := summaryRow(body)
		sum = &r
		out.Summarized = len(removed)
	}

	var kept []store.Message
	placed := false
	for i := range rows {
		if !keep[i] {
			continue
		}
		if sum != nil && !placed && !removedAfterUser && i == user {
			kept = append(kept, *sum) // everything removed came before the user's message
			placed = true
		}
		kept = append(kept, rows[i])
		if sum != nil && !placed && i == user {
			kept = append(kept, *sum) // the work since the user's message, summarized
			placed = true
		}
	}
	if sum != nil && !placed {
		kept = append([]store.Message{*sum}, kept...)
	}

	total := requestOverhead + EstimateSystem(in.System) + EstimateTools(in.Tools)
	var tools []int
	for i := range kept {
		total += rowCost(&kept[i])
		if kept[i].Role == llm.RoleTool {
			tools = append(tools, i)
		}
	}
	// Cut the kept tool results, largest first in effect: each gets an
	// equal share of what the rest leaves, and only those over it shrink.
	for round := 0; round < 3 && total > target && len(tools) > 0; round++ {
		toolCost := 0
		for _, i := range tools {
			toolCost += rowCost(&kept[i])
		}
		share := max((target-(total-toolCost))/len(tools), 0)
		for _, i := range tools {
			if rowCost(&kept[i]) <= share {
				continue
			}
			text := wireText(&kept[i])
			// Aim a little under the share: the marker and the estimate's
			// rounding add a few tokens back.
			n := max(len(text)*share*9/10/max(rowCost(&kept[i]), 1), minKeepBytes)
			if n >= len(text) {
				continue
			}
			old := rowCost(&kept[i])
			kept[i].Content = []llm.Part{llm.TextPart(truncateMiddle(text, n))}
			kept[i].APIContent = ""
			total += rowCost(&kept[i]) - old
			out.Pruned++
		}
	}
	out.After = report(total)
	if len(removed) == 0 && out.Pruned == 0 {
		return out, ErrNothingToCompress
	}
	if total > target {
		if total < before {
			out.Rows = kept // smaller, if not small enough: the caller may still use it
		}
		return out, ErrCannotFit
	}
	if total >= before {
		return out, ErrNoProgress
	}
	out.Rows = kept
	return out, nil
}

// emergencyKeep marks the rows an emergency pass keeps: the latest real
// user message, and the newest assistant row with tool calls after it with
// that row's results.
func emergencyKeep(rows []store.Message) []bool {
	keep := make([]bool, len(rows))
	user := -1
	for i := len(rows) - 1; i >= 0; i-- {
		if isRealUser(&rows[i]) {
			user = i
			break
		}
	}
	if user < 0 {
		return keep
	}
	keep[user] = true
	for i := len(rows) - 1; i > user; i-- {
		if rows[i].Role != llm.RoleAssistant || len(rows[i].ToolCalls) == 0 {
			continue
		}
		keep[i] = true
		ids := map[string]bool{}
		for _, c := range rows[i].ToolCalls {
			ids[c.ID] = true
		}
		for j := i + 1; j < len(rows); j++ {
			if rows[j].Role == llm.RoleTool && ids[rows[j].ToolCallID] {
				keep[j] = true
			}
		}
		break
	}
	return keep
}

// truncateMiddle keeps about n bytes of s: its head and tail around
// TruncatedMarker.
func truncateMiddle(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := cutMiddle(s, n)
	return fmt.Sprintf("%s\n%s (%d bytes omitted)\n%s", s[:head], TruncatedMarker, tail-head, s[tail:])
}
