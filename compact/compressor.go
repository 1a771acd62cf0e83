package compact

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/talaria-agent/talaria/internal/setting"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// FailureMode says what Compress does when the summary call fails.
type FailureMode string

const (
	// FailPlaceholder replaces the middle with a placeholder summary that
	// says how many messages were removed (the default).
	FailPlaceholder FailureMode = "placeholder"
	// FailAbort returns the error and leaves the transcript alone.
	FailAbort FailureMode = "abort"
)

// Defaults of the Compressor's fields.
const (
	DefaultSummaryTimeout   = 60 * time.Second
	DefaultMinTailMessages  = 6
	DefaultPruneOver        = 2000
	DefaultSummaryMaxTokens = 4096
	DefaultMaxSummaryInput  = 200_000
)

// Errors of Compress; callers branch on them with errors.Is.
var (
	// ErrNothingToCompress: there is no middle to summarize and no tool
	// output to prune.
	ErrNothingToCompress = errors.New("compact: nothing to compress")
	// ErrNoProgress: the compressed transcript is not smaller than the
	// original; the caller should Block its Budget.
	ErrNoProgress = errors.New("compact: compression made no progress")
	// ErrUnderTarget: the transcript is already under Target and Force is
	// not set; nothing was done (the pass was unnecessary: refund it).
	ErrUnderTarget = errors.New("compact: already under target")
	// ErrSummaryFailed wraps the summary call's error under FailAbort.
	ErrSummaryFailed = errors.New("compact: summary failed")
)

// Summarizer streams an answer from the auxiliary model; llm.Provider
// satisfies it.
type Summarizer interface {
	Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error]
}

// Compressor shrinks a transcript: it prunes old large tool outputs and,
// when that is not enough, replaces the middle of the transcript with a
// summary written by an auxiliary model. Its fields are read-only during
// Compress, so one Compressor may serve concurrent turns when its
// Summarizer may.
type Compressor struct {
	// Summarizer writes the summary.
	Summarizer Summarizer
	// Model is the auxiliary model asked for summaries.
	Model string
	// Timeout bounds the summary call (DefaultSummaryTimeout when zero).
	Timeout time.Duration
	// TailTokens is the token budget of the protected tail; when zero, 20%
	// of the Target, which leaves the rest for head, summary and growth.
	TailTokens int
	// MinTailMessages is how many of the last messages always stay verbatim
	// (DefaultMinTailMessages when zero).
	MinTailMessages int
	// PruneOver: tool outputs longer than this many bytes outside the tail
	// are pruned first (DefaultPruneOver when zero).
	PruneOver int
	// OnFailure says what a failed summary call does (FailPlaceholder when
	// empty).
	OnFailure FailureMode
	// SummaryMaxTokens caps the summary's length (DefaultSummaryMaxTokens
	// when zero).
	SummaryMaxTokens int
	// MaxSummaryInput bounds, in bytes, the transcript text sent to the
	// summarizer; long rows are clipped to fit (DefaultMaxSummaryInput when
	// zero).
	MaxSummaryInput int
}

// Input is what Compress works on.
type Input struct {
	// System is the system prompt: not part of Rows, always kept, counted.
	System string
	// Tools are the offered tool definitions, counted in the estimates only.
	Tools []llm.ToolSpec
	// Rows is the live transcript in order (no archived rows).
	Rows []store.Message
	// Target: get the estimated request under this many tokens.
	Target int
	// Measured, when positive, is the caller's better measure of the current
	// request (Accountant.Estimate, which rests on provider counts). The
	// compressor's own estimates are scaled by Measured/estimate, so a
	// tokenizer its heuristic misjudges still gets compressed under Target.
	Measured int
	// Force compresses even when already under Target (the /compact command):
	// every eligible tool output is pruned and the middle summarized.
	Force bool
	// Emergency is the last resort when the provider still says the
	// context is too long and a normal pass found nothing to shrink: only
	// the latest user message and the newest tool call with its results
	// are kept (results cut to a head and a tail), everything else is
	// summarized. It returns ErrCannotFit when even that is over Target.
	Emergency bool
}

// Output is the compressed transcript and what it took.
type Output struct {
	// Rows is the new live transcript: head copies + the summary (when one
	// was written) + tail copies, with ID, Seq and SessionID zeroed and
	// every other field kept. Nil whenever Compress returns an error.
	Rows []store.Message
	// Pruned counts tool outputs replaced by a marker.
	Pruned int
	// Summarized counts rows replaced by the summary (0 when pruning was
	// enough).
	Summarized int
	// Before and After are estimated prompt tokens (scaled by Measured).
	Before, After int
	// Usage is the summary call's.
	Usage llm.Usage
	// SummaryFailed is set when the placeholder summary was used.
	SummaryFailed bool
}

// settings are the Compressor's fields with defaults applied.
type settings struct {
	timeout          time.Duration
	minTail          int
	pruneOver        int
	onFailure        FailureMode
	summaryMaxTokens int
	maxInput         int
}

func (c *Compressor) settings() settings {
	s := settings{
		timeout: c.Timeout, minTail: c.MinTailMessages, pruneOver: c.PruneOver,
		onFailure: c.OnFailure, summaryMaxTokens: c.SummaryMaxTokens, maxInput: c.MaxSummaryInput,
	}
	s.timeout = setting.Or(s.timeout, DefaultSummaryTimeout)
	s.minTail = setting.Or(s.minTail, DefaultMinTailMessages)
	s.pruneOver = setting.Or(s.pruneOver, DefaultPruneOver)
	if s.onFailure == "" {
		s.onFailure = FailPlaceholder
	}
	s.summaryMaxTokens = setting.Or(s.summaryMaxTokens, DefaultSummaryMaxTokens)
	s.maxInput = setting.Or(s.maxInput, DefaultMaxSummaryInput)
	return s
}

// Compress shrinks in.Rows until the estimated request fits in.Target:
//
//  1. Prune: old tool outputs over PruneOver bytes outside the protected
//     tail, oldest first, become a marker with the tool name, size and first
//     line. If that reaches Target (and !Force), it stops without a model
//     call.
//  2. Summarize: the rows between the head (the first exchange) and the
//     tail (the last messages within TailTokens, at least MinTailMessages,
//     always from the last real user message on) are replaced by one
//     reference-only summary row (Role user, RowSummary, Synthetic),
//     merging any earlier summary found there. Boundaries move outward so a
//     tool call and its results are never split.
//
// A failed or timed-out summary call yields a placeholder summary
// (FailPlaceholder) or an error wrapping ErrSummaryFailed (FailAbort); a
// cancelled ctx always returns its error. Returns ErrUnderTarget,
// ErrNothingToCompress or ErrNoProgress as documented on them.
func (c *Compressor) Compress(ctx context.Context, in Input) (Output, error) {
	if err := ctx.Err(); err != nil {
		return Output{}, fmt.Errorf("compact: %w", err)
	}
	if in.Emergency {
		return c.emergency(ctx, in)
	}
	s := c.settings()

	rows := make([]store.Message, len(in.Rows))
	costs := make([]int, len(in.Rows))
	fixed := requestOverhead + EstimateSystem(in.System) + EstimateTools(in.Tools)
	before := fixed
	for i := range in.Rows {
		rows[i] = copyRow(in.Rows[i])
		costs[i] = rowCost(&rows[i])
		before += costs[i]
	}

	// Work in own-estimate units; report in the caller's.
	u := in.units(before)
	target, report := u.own(in.Target), u.report
	out := Output{Before: report(before), After: report(before)}

	if !in.Force && before <= target {
		return out, ErrUnderTarget
	}

	tailBudget := u.own(c.TailTokens)
	if c.TailTokens <= 0 {
		tailBudget = max(target, 0) / 5
	}
	p := indexPairs(rows)
	head := headEnd(rows, p)
	protected := tailStart(rows, costs, tailBudget, s.minTail, head, p)
	tail := max(protected, head)

	total := before
	pruned := make([]bool, len(rows))
	for i := 0; i < protected; i++ {
		if !in.Force && total <= target {
			break
		}
		if !prunable(&rows[i], s.pruneOver) {
			continue
		}
		if nc, ok := prune(&rows[i], costs[i]); ok {
			total += nc - costs[i]
			costs[i] = nc
			pruned[i] = true
			out.Pruned++
		}
	}
	out.After = report(total)

	if (!in.Force && total <= target) || tail <= head {
		switch {
		case out.Pruned == 0:
			return out, ErrNothingToCompress
		case total >= before:
			return out, ErrNoProgress
		}
		out.Rows = rows
		return out, nil
	}

	// The summarizer reads the middle as it was, not pruned: it clips long
	// rows itself, and a marker would hide what the tool returned.
	middle := in.Rows[head:tail]
	body, usage, err := c.summarize(ctx, middle, s)
	out.Usage = usage
	if err != nil {
		if ctx.Err() != nil {
			return Output{Before: out.Before, After: out.Before}, fmt.Errorf("compact: %w", ctx.Err())
		}
		if s.onFailure == FailAbort {
			return Output{Before: out.Before, After: out.Before, Usage: usage},
				fmt.Errorf("%w: %w", ErrSummaryFailed, err)
		}
		body = placeholderBody(len(middle))
		out.SummaryFailed = true
	}

	sum := summaryRow(body)
	after := total + rowCost(&sum)
	for i := head; i < tail; i++ {
		after -= costs[i]
	}
	out.After = report(after)
	out.Summarized = len(middle)
	// Outputs pruned in the middle went into the summary; count only those
	// still in the transcript.
	for i := head; i < tail; i++ {
		if pruned[i] {
			out.Pruned--
		}
	}
	if after >= before {
		out.Rows = nil
		return out, ErrNoProgress
	}
	newRows := make([]store.Message, 0, head+1+len(rows)-tail)
	newRows = append(newRows, rows[:head]...)
	newRows = append(newRows, sum)
	newRows = append(newRows, rows[tail:]...)
	out.Rows = newRows
	return out, nil
}

// scaleUnits is caller-measured tokens per token of the compressor's own
// estimate: the compressor works in its own units and reports in the
// caller's.
type scaleUnits float64

// units is the scale for rows the compressor estimates at before tokens
// (1 when the caller measured nothing).
func (in Input) units(before int) scaleUnits {
	if in.Measured > 0 && before > 0 {
		return scaleUnits(float64(in.Measured) / float64(before))
	}
	return 1
}

func (u scaleUnits) own(n int) int    { return int(float64(n) / float64(u)) }
func (u scaleUnits) report(n int) int { return int(float64(n)*float64(u) + 0.5) }
