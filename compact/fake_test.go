package compact

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// fakeSummarizer records every request and answers with text, fails with
// err, or blocks until the call's context ends.
type fakeSummarizer struct {
	text  string
	err   error
	block bool

	mu   sync.Mutex
	reqs []*llm.Request
}

func (f *fakeSummarizer) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		f.mu.Lock()
		f.reqs = append(f.reqs, req)
		f.mu.Unlock()
		switch {
		case f.block:
			<-ctx.Done()
			yield(llm.Event{}, &llm.APIError{Provider: "fake", Transport: llm.TransportCanceled, Err: ctx.Err()})
			return
		case f.err != nil:
			yield(llm.Event{}, f.err)
			return
		}
		if !yield(llm.Event{Type: llm.EventTextDelta, Text: f.text}, nil) {
			return
		}
		yield(llm.Event{Type: llm.EventDone, Response: &llm.Response{
			Message:      llm.NewText(llm.RoleAssistant, f.text),
			FinishReason: llm.FinishStop,
			Usage:        llm.Usage{InputTokens: 1234, OutputTokens: 56, Reported: true},
		}}, nil)
	}
}

func (f *fakeSummarizer) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// prompt returns the single request's user text.
func (f *fakeSummarizer) prompt(t *testing.T) string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) != 1 {
		t.Fatalf("summarizer called %d times, want 1", len(f.reqs))
	}
	r := f.reqs[0]
	if len(r.Messages) != 1 || r.Messages[0].Role != llm.RoleUser {
		t.Fatalf("summary request messages = %+v, want one user message", r.Messages)
	}
	return r.Messages[0].Text()
}

const fakeSummary = "## Task\nFix the build.\n## State\nEdited main.go.\n## Pending asks\nNone.\n## Remaining work\nRun tests."

// Row builders. Each row gets a distinct ID and Seq so tests can check that
// copies drop them.
type transcript struct{ rows []store.Message }

func (tr *transcript) add(m store.Message) *transcript {
	n := int64(len(tr.rows) + 1)
	m.ID, m.Seq, m.SessionID = 100+n, n, "sess-1"
	tr.rows = append(tr.rows, m)
	return tr
}

func (tr *transcript) user(text string) *transcript {
	return tr.add(store.Message{Message: llm.NewText(llm.RoleUser, text), TurnID: "turn"})
}

func (tr *transcript) say(text string) *transcript {
	return tr.add(store.Message{Message: llm.NewText(llm.RoleAssistant, text), FinishReason: llm.FinishStop})
}

func (tr *transcript) engine(kind store.RowKind, text string) *transcript {
	return tr.add(store.Message{Message: llm.NewText(llm.RoleUser, text), Kind: kind, Synthetic: true})
}

// call adds an assistant row calling tool once per id, then one result row
// per id whose output is out(id).
func (tr *transcript) call(tool string, out func(id string) string, ids ...string) *transcript {
	m := store.Message{Message: llm.Message{Role: llm.RoleAssistant}, FinishReason: llm.FinishToolCalls}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: id, Name: tool, Arguments: fmt.Sprintf(`{"arg":%q}`, id)})
	}
	tr.add(m)
	for _, c := range m.ToolCalls {
		tr.add(store.Message{Message: llm.NewToolResult(c, out(c.ID), false)})
	}
	return tr
}

// small is a tool output well under PruneOver but larger than a summary.
func small(id string) string { return "output of " + id + "\n" + filler }

// filler pads rows so that summarizing them is progress.
var filler = strings.Repeat("some context words ", 30)

// pad appends filler to s.
func pad(s string) string { return s + "\n" + filler }

func big(id string) string {
	return "first line of " + id + "\n" + strings.Repeat("lorem ipsum dolor sit amet ", 400)
}

// estimateRows is the compressor's own estimate of a transcript.
func estimateRows(system string, rows []store.Message) int {
	n := requestOverhead + EstimateSystem(system)
	for i := range rows {
		n += rowCost(&rows[i])
	}
	return n
}

// checkPairs fails when a tool result has no earlier assistant call in rows,
// or a call has no result.
func checkPairs(t *testing.T, rows []store.Message) {
	t.Helper()
	called := map[string]bool{}
	answered := map[string]bool{}
	for i, m := range rows {
		for _, c := range m.ToolCalls {
			called[c.ID] = true
		}
		if m.Role == llm.RoleTool {
			if !called[m.ToolCallID] {
				t.Fatalf("row %d: result %q without an earlier call", i, m.ToolCallID)
			}
			answered[m.ToolCallID] = true
		}
	}
	for id := range called {
		if !answered[id] {
			t.Fatalf("call %q lost its result", id)
		}
	}
}

// texts returns the text of every row, in order.
func texts(rows []store.Message) []string {
	out := make([]string, len(rows))
	for i := range rows {
		out[i] = wireText(&rows[i])
	}
	return out
}

func containsText(rows []store.Message, s string) bool {
	for i := range rows {
		if strings.Contains(wireText(&rows[i]), s) {
			return true
		}
	}
	return false
}
