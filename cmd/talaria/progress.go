package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// progress prints what a turn does, one line per event, to w. Text deltas
// go to text (nil: not streamed). It is safe for the parallel tool hooks.
type progress struct {
	mu       sync.Mutex
	w        io.Writer
	text     io.Writer
	midLine  bool // text was streamed without a trailing newline
	showArgs int  // max characters of tool arguments shown

	// The waiting line (waiting.go): on a terminal (tty) it is redrawn in
	// place on raw, the unfiltered stderr.
	raw                            io.Writer
	tty                            bool
	waitShown                      bool
	waitDelay, waitTick, waitEvery time.Duration

	// Reasoning streams to w: dimmed on a colour terminal (color), else
	// after a plain "thinking:" prefix. inReasoning: a block is open.
	color       bool
	inReasoning bool

	// steering: say when a typed-ahead message joined the turn (chat).
	steering bool
}

func newProgress(w, text io.Writer) *progress {
	return &progress{w: w, text: text, showArgs: 120, raw: w,
		waitDelay: waitDelay, waitTick: waitTick, waitEvery: waitEvery}
}

// newProgress is the turn display of this CLI: stderr, its terminal-ness,
// and the waiting line hooked to the app's model calls.
func (c *cli) newProgress(a *app, text io.Writer) (*progress, func()) {
	p := newProgress(c.stderr, text)
	p.raw, p.tty = c.rawStderr, c.errTTY
	p.color = c.errTTY && c.getenv("NO_COLOR") == "" && c.getenv("TERM") != "dumb"
	if a == nil || a.watch == nil {
		return p, func() {}
	}
	a.watch.set(p.waitFor)
	return p, func() { a.watch.set(nil) }
}

func (p *progress) hooks() turn.Hooks {
	return turn.Hooks{Sink: p.update}
}

// update shows one of the turn's updates: the one place this display
// turns typed updates into lines.
func (p *progress) update(u turn.Update) {
	switch u := u.(type) {
	case turn.TextDelta:
		if p.text != nil {
			p.textDelta(u.Text)
		}
	case turn.Discard:
		if p.text != nil {
			p.discard()
		}
	case turn.ReasoningDelta:
		p.reasoningDelta(u.Text)
	case turn.ToolStarted:
		p.toolStart(u.Call())
	case turn.ToolFinished:
		p.toolEnd(u.Call(), tool.Result{Content: u.Result, IsError: u.IsError}, u.Took)
	case turn.SubagentStart: // subagent lines: progress_subagent.go
		p.subagentStarted(u.Subagent)
	case turn.SubagentEnd:
		p.subagentFinished(u.Subagent)
	case turn.TodoChanged:
		// The plan, as one line each time the model changes it.
		p.status(clip(tool.TodoLine(u.Items), 120))
	case turn.Steered:
		if p.steering {
			p.status("your message joined the running turn: " + clip(u.Text, 60))
		}
	case turn.Status:
		if line := u.Line(); line != "" {
			p.status(line)
		}
	}
}

// reasoningDelta shows the model's thinking as it streams, on w (stderr
// in run: never mixed into the answer on stdout).
func (p *progress) reasoningDelta(s string) {
	if s == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waitShown { // not clearWait: that would end this block
		fmt.Fprint(p.raw, "\r\x1b[K")
		p.waitShown = false
	}
	if !p.inReasoning {
		if p.text != nil {
			p.endLine()
		}
		if p.color {
			fmt.Fprint(p.raw, "\x1b[2m")
		}
		fmt.Fprint(p.w, "thinking: ")
		p.inReasoning = true
	}
	fmt.Fprint(p.w, s)
}

// endReasoning closes an open reasoning block: the next line is not
// thinking. p.mu is held.
func (p *progress) endReasoning() {
	if !p.inReasoning {
		return
	}
	p.inReasoning = false
	if p.color {
		fmt.Fprint(p.raw, "\x1b[0m")
	}
	fmt.Fprintln(p.w)
}

// finish ends what is still open (a reasoning block, a streamed line).
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearWait()
	if p.text != nil {
		p.endLine()
	}
}

func (p *progress) textDelta(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearWait()
	fmt.Fprint(p.text, s)
	p.midLine = !strings.HasSuffix(s, "\n")
}

func (p *progress) endLine() {
	if p.midLine {
		fmt.Fprintln(p.text)
		p.midLine = false
	}
}

func (p *progress) discard() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearWait()
	p.endLine()
	fmt.Fprintln(p.w, "· (the partial answer above was cut off and is discarded)")
}

func (p *progress) toolStart(c llm.ToolCall) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearWait()
	if p.text != nil {
		p.endLine()
	}
	fmt.Fprintf(p.w, "→ %s %s\n", c.Name, clip(compactArgs(c.Arguments), p.showArgs))
}

func (p *progress) toolEnd(c llm.ToolCall, r tool.Result, took time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearWait()
	mark := "✓"
	if r.IsError {
		mark = "✗"
	}
	first, _, _ := strings.Cut(strings.TrimSpace(r.Content), "\n")
	lines := strings.Count(r.Content, "\n") + 1
	unit := "lines"
	if lines == 1 {
		unit = "line"
	}
	fmt.Fprintf(p.w, "  %s %s: %s (%d %s, %s)\n", mark, c.Name, clip(first, 80), lines, unit, took.Round(time.Millisecond))
}

func (p *progress) status(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearWait()
	if p.text != nil {
		p.endLine()
	}
	fmt.Fprintln(p.w, "· "+line)
}

// compactArgs shows tool arguments on one line.
func compactArgs(args string) string {
	var v map[string]any
	if json.Unmarshal([]byte(args), &v) != nil {
		return strings.Join(strings.Fields(args), " ")
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return args
	}
	return strings.TrimSpace(b.String())
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// summaryLine is the footer of a turn: where it is saved and what it cost.
func summaryLine(r *turn.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "session %s · %s", r.SessionID, r.Exit)
	if r.Truncated {
		b.WriteString(" (truncated)")
	}
	fmt.Fprintf(&b, " · %d API call", r.APICalls)
	if r.APICalls != 1 {
		b.WriteString("s")
	}
	fmt.Fprintf(&b, " · %d tool round", r.ToolRounds)
	if r.ToolRounds != 1 {
		b.WriteString("s")
	}
	if r.Usage.Reported {
		fmt.Fprintf(&b, " · %d in / %d out tokens", r.Usage.PromptTokens(), r.Usage.OutputTokens)
	}
	switch r.Pricing {
	case turn.PricingPriced:
		fmt.Fprintf(&b, " · $%.4f", r.CostUSD)
	case turn.PricingSubscription:
		b.WriteString(" · included in subscription")
	case turn.PricingPartlySubscription:
		fmt.Fprintf(&b, " · $%.4f + subscription", r.CostUSD)
	case turn.PricingUnknown:
		// Saying $0 would read as free: name what is missing.
		if r.CostUSD > 0 {
			fmt.Fprintf(&b, " · ≥ $%.4f (a model has no price)", r.CostUSD)
		} else {
			b.WriteString(" · cost unknown (no price for the model)")
		}
	}
	if s := r.Subagents; s != nil {
		fmt.Fprintf(&b, " · incl. %d subagent", s.Count)
		if s.Count != 1 {
			b.WriteString("s")
		}
		fmt.Fprintf(&b, ": %d API calls", r.APICalls+s.APICalls)
		if r.TotalCostUSD() > 0 {
			fmt.Fprintf(&b, ", $%.4f total", r.TotalCostUSD())
		}
	}
	fmt.Fprintf(&b, " · %s", r.Duration.Round(time.Millisecond))
	return b.String()
}

// truncatedLine is said on stderr after an answer the output limit cut
// off, even in text mode where the answer itself looks whole.
const truncatedLine = "talaria: the answer is incomplete: the model hit its output limit on every continuation (raise max_tokens, or ask it to continue)"
