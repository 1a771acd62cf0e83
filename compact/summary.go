package compact

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// SummaryMarker starts every summary row. It tells the model the row is
// reference material, so an old request quoted in it is not acted on again.
const SummaryMarker = "[Context summary — reference only: earlier turns were compressed. " +
	"Continue from the latest user message; do not act on this summary as a new request.]"

// summarySystem instructs the auxiliary model.
const summarySystem = `You compress the middle part of a conversation between a user and an AI agent that uses tools, so the agent can continue the same work with less context. The beginning of the conversation and its latest messages are kept verbatim elsewhere; you see only the part in between.

Write a concise, factual summary with exactly these headings:

## Task
What the user asked for, in their words where possible.

## State
What was done, found and changed: files and paths, commands run and their outcomes, decisions, errors and how they were resolved.

## Pending asks
Requests from the user that are not yet fulfilled.

## Remaining work
What still has to be done to finish.

Rules:
- Sections labelled "engine note" were written by the runtime (continuation nudges, budget notices, failure notices, earlier summaries). They are not requests from the user: never report them as the task or as pending asks.
- Keep file paths, identifiers, numbers, commands and error messages exact.
- When a previous summary is given, merge it with the new material into one summary; drop what the new material shows to be finished or obsolete.
- Output only the summary, without preamble.`

// errEmptySummary is the failure of a summary call that returned no text.
var errEmptySummary = errors.New("summary model returned no text")

// summaryInput renders the middle for the auxiliary model, labelling who
// wrote each row and clipping long ones so the request stays bounded.
func summaryInput(middle []store.Message, maxChars int) string {
	perRow := maxChars / max(len(middle), 1)
	perRow = min(max(perRow, 800), 12000)

	var prev []string
	for i := range middle {
		if middle[i].Kind == store.RowSummary {
			prev = append(prev, strings.TrimSpace(strings.TrimPrefix(wireText(&middle[i]), SummaryMarker)))
		}
	}
	var b strings.Builder
	if len(prev) > 0 {
		// First, as it covers what came before the excerpt.
		b.WriteString("A previous summary covers what came before the excerpt below. Merge it into your summary:\n<previous-summary>\n")
		b.WriteString(clip(strings.Join(prev, "\n\n"), maxChars/2))
		b.WriteString("\n</previous-summary>\n\n")
	}
	b.WriteString("Conversation excerpt to summarize, oldest first:\n")
	for i := range middle {
		m := &middle[i]
		if m.Kind == store.RowSummary {
			continue
		}
		b.WriteString("\n### ")
		b.WriteString(rowLabel(m))
		b.WriteString("\n")
		if t := strings.TrimSpace(wireText(m)); t != "" {
			b.WriteString(clip(t, perRow))
			b.WriteString("\n")
		}
		if m.HasImages() {
			b.WriteString("[image]\n")
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "→ call %s(%s)\n", c.Name, clip(c.Arguments, min(perRow, 2000)))
		}
	}
	return b.String()
}

func rowLabel(m *store.Message) string {
	switch {
	case m.Role == llm.RoleUser && isRealUser(m):
		return "user"
	case m.Role == llm.RoleUser || m.Synthetic || isEngineKind(m.Kind):
		return "engine note (not from the user)"
	case m.Role == llm.RoleTool:
		name := m.ToolName
		if name == "" {
			name = "tool"
		}
		if m.IsError {
			return "tool result: " + name + " (error)"
		}
		return "tool result: " + name
	default:
		return string(m.Role)
	}
}

// summarize asks the auxiliary model for the summary of middle.
func (c *Compressor) summarize(ctx context.Context, middle []store.Message, s settings) (string, llm.Usage, error) {
	if c.Summarizer == nil {
		return "", llm.Usage{}, errors.New("no summarizer configured")
	}
	req := &llm.Request{
		Model:     c.Model,
		System:    summarySystem,
		Messages:  []llm.Message{llm.NewText(llm.RoleUser, summaryInput(middle, s.maxInput))},
		MaxTokens: s.summaryMaxTokens,
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	resp, err := llm.Collect(c.Summarizer.Stream(ctx, req), nil)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			// Say it timed out even when the provider's error hides why.
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		return "", llm.Usage{}, err
	}
	text := strings.TrimSpace(resp.Message.Text())
	text = strings.TrimSpace(strings.TrimPrefix(text, SummaryMarker))
	if text == "" {
		return "", resp.Usage, errEmptySummary
	}
	return text, resp.Usage, nil
}

// summaryRow builds the reference-only row that replaces the middle.
func summaryRow(body string) store.Message {
	return store.Message{
		Message:   llm.NewText(llm.RoleUser, SummaryMarker+"\n\n"+body),
		Kind:      store.RowSummary,
		Synthetic: true,
	}
}

// placeholderBody stands in for a summary the model could not write.
func placeholderBody(removed int) string {
	return fmt.Sprintf("A summary could not be produced: %d earlier messages were removed to fit the context window. "+
		"Details from them are no longer available here; ask the user or re-read files if they are needed.", removed)
}
