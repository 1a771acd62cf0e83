package turn_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// Every update survives its wire form: a client decodes what the server
// encoded into the same typed value.
func TestUpdateRoundTrip(t *testing.T) {
	guard := turn.Guard{Guard: turn.GuardEmptyResponse, Action: "retry", Route: "p/m", Attempts: 2}
	for _, u := range []turn.Update{
		turn.TextDelta{Text: "hé"},
		turn.ReasoningDelta{Text: "hmm"},
		turn.Discard{},
		turn.CallStarted{Provider: "p", Model: "m", Attempt: 2, EstimatedTokens: 900},
		turn.CallFailed{Provider: "p", Model: "m", Class: "rate_limit", HTTPStatus: 429, Retryable: true,
			Decision: turn.DecisionRetry, Wait: 1500 * time.Millisecond, Retry: 1, MaxRetries: 3, Summary: "rate limited"},
		turn.Fallback{From: "a/x", To: "b/y", Class: "auth", Summary: "refused"},
		turn.Compression{Step: turn.CompressDone, Before: 9000, After: 3000, Summarized: 12, SummaryFailed: true, RotatedTo: "s2"},
		guard,
		turn.Continuation{Reason: turn.ContinueToolCallCut, N: 1, Of: 2, Tool: "write_file", RaisedTo: 8192},
		turn.Pressure{Tokens: 900, Window: 1000, Ratio: 0.85, Model: "m", Compression: "disabled", Advice: "start anew"},
		turn.SessionContinued{From: "a", To: "b"},
		turn.Handoff{From: "node-a", To: "node-b", Reason: "its lease expired", Count: 1, Max: 2},
		turn.SubagentStatus{SessionID: "c1", Status: guard},
		turn.StatusLine{Kind: turn.StatusRetry, Text: "an old server's line"},
		turn.ToolStarted{CallID: "c", Name: "read_file", Arguments: `{"path":"x"}`},
		turn.ToolFinished{CallID: "c", Name: "read_file", Arguments: `{"path":"x"}`, Result: "ok", IsError: true, DurationMS: 12, Took: 12 * time.Millisecond},
		turn.ApprovalRequired{CallID: "c", Name: "bash", Arguments: "{}", TimeoutMS: 1000, Description: "runs"},
		turn.SubagentStart{Subagent: turn.SubagentEvent{ParentSessionID: "p", SessionID: "c", Kind: "subagent", Task: "t"}},
		turn.SubagentEnd{Subagent: turn.SubagentEvent{SessionID: "c", Exit: turn.ExitCompleted, APICalls: 2, CostUSD: 0.5}},
		turn.Steered{ID: "t2", Text: "also this"},
		turn.TodoChanged{Items: []tool.TodoItem{{ID: "1", Text: "a", Status: "pending"}}},
		turn.PromptRebuilt{ToolsAdded: []string{"a"}, ToolsRemoved: []string{"b"}, ToolsChanged: []string{"c"}, Memory: true, Instructions: true},
		turn.Finished{Result: turn.Result{SessionID: "s", TurnID: "t", Exit: turn.ExitCompleted, FinalText: "done"}},
	} {
		b, err := json.Marshal(u)
		if err != nil {
			t.Fatalf("%T: %v", u, err)
		}
		back, err := turn.DecodeUpdate(turn.KindOf(u), b)
		if err != nil {
			t.Fatalf("%T %s: %v", u, b, err)
		}
		if !reflect.DeepEqual(back, u) {
			t.Errorf("%s %s:\n got %#v\nwant %#v", turn.KindOf(u), b, back, u)
		}
	}
	var unknown *turn.UnknownUpdateError
	if _, err := turn.DecodeUpdate("from_the_future", []byte(`{}`)); !errors.As(err, &unknown) {
		t.Errorf("unknown kind: %v, want UnknownUpdateError", err)
	}
	if _, err := turn.DecodeUpdate("text_delta", []byte(`{"text":1}`)); err == nil {
		t.Error("a malformed update decoded")
	}
}

// The old callbacks are fed from the same emission as the Sink: one fact,
// both views, with the status line rendered from the typed update.
func TestHooksAdaptSink(t *testing.T) {
	var (
		got      []turn.Update
		lines    []string
		text     string
		started  llm.ToolCall
		took     time.Duration
		pressure *turn.Pressure
	)
	h := turn.Hooks{
		Sink:      func(u turn.Update) { got = append(got, u) },
		Status:    func(l string) { lines = append(lines, l) },
		TextDelta: func(s string) { text += s },
		ToolStart: func(c llm.ToolCall) { started = c },
		ToolEnd:   func(_ llm.ToolCall, _ tool.Result, d time.Duration) { took = d },
	}
	retry := turn.CallFailed{Decision: turn.DecisionRetry, Wait: time.Second, Retry: 1, MaxRetries: 3, Summary: "busy"}
	for _, u := range []turn.Update{
		turn.TextDelta{Text: "a"}, retry, turn.CallFailed{Decision: turn.DecisionStop},
		turn.ToolStarted{CallID: "c", Name: "ls"}, turn.ToolFinished{CallID: "c", Took: time.Second},
		turn.Pressure{Tokens: 1, Window: 2, Model: "m"},
	} {
		h.Emit(u)
	}
	if len(got) != 6 || text != "a" || started.Name != "ls" || took != time.Second {
		t.Errorf("sink %d updates, text %q, tool %q, took %v", len(got), text, started.Name, took)
	}
	// A stop has no line; pressure without its own callback is a line.
	if len(lines) != 2 || lines[0] != retry.Line() || lines[0] != "retrying in 1s: busy (retry 1 of 3)" {
		t.Errorf("status lines %q", lines)
	}
	h.ContextPressure = func(p turn.Pressure) { pressure = &p }
	h.Emit(turn.Pressure{Tokens: 5})
	if pressure == nil || pressure.Tokens != 5 || len(lines) != 2 {
		t.Errorf("pressure callback %v, lines %q", pressure, lines)
	}
}
