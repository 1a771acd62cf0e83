package gateway

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/turn"
)

// Status events are derived from typed updates: the line and kind clients
// read are the ones the prose classifier used to guess, and the update
// itself travels beside them and decodes back to what the engine emitted.
func TestStatusEventsFromUpdates(t *testing.T) {
	for _, c := range []struct {
		u          turn.Status
		line, kind string
	}{
		{turn.CallFailed{Decision: turn.DecisionRetry, Wait: 2 * time.Second, Retry: 1, MaxRetries: 3, Provider: "openai",
			Class: "rate_limit", Summary: "rate limited by openai (429)"}, "retrying in 2s: rate limited by openai (429) (retry 1 of 3)", "retry"},
		{turn.Fallback{From: "openai/gpt-4.1", To: "claude/claude-sonnet-4-5", Summary: "openai overloaded (503)"},
			"falling back from openai/gpt-4.1 to claude/claude-sonnet-4-5: openai overloaded (503)", "fallback"},
		{turn.CallFailed{Decision: turn.DecisionRotate, Provider: "openai", Summary: "openai rejected the credential (401)"},
			"switching to another openai key: openai rejected the credential (401)", "rotation"},
		{turn.Compression{Step: turn.CompressThreshold, Tokens: 9000, Threshold: 8000, Model: "m"},
			"context is ~9000 tokens, over the 8000-token threshold of m: compressing", "compression"},
		{turn.Compression{Step: turn.CompressOverflow, Summary: "prompt is too long"}, "prompt is too long: compressing and retrying", "compression"},
		{turn.Compression{Step: turn.CompressNoProgress}, "compression made no progress; not trying again this turn", "compression"},
		{turn.Guard{Guard: turn.GuardSaidButStopped, Action: "nudge"}, "the model announced an action but stopped; nudging it to continue", "guard"},
		{turn.Guard{Guard: turn.GuardEmptyResponse, Action: "retry", Route: "primary", Attempts: 1},
			"primary returned an empty answer; retrying (1 so far)", "guard"},
		{turn.Guard{Guard: turn.GuardIterationBudget, Action: "grace_call"}, "iteration budget spent: asking the model to sum up without tools", "guard"},
		{turn.Continuation{Reason: turn.ContinueOutputLimit, N: 1, Of: 4}, "the answer hit the output limit; continuing (1 of 4)", "continuation"},
		{turn.Continuation{Reason: turn.ContinueMidSentence}, "the answer stopped mid-sentence; asking the model to continue it", "continuation"},
		{turn.SessionContinued{From: "a", To: "b"}, "session a was continued as b; using that", "other"},
		{turn.SubagentStatus{SessionID: "c1", Status: turn.Guard{Guard: turn.GuardSaidButStopped, Action: "nudge"}},
			"subagent c1: the model announced an action but stopped; nudging it to continue", "guard"},
	} {
		typ, data, ok := updateEvent("t1", c.u)
		if !ok || typ != api.EventStatus {
			t.Fatalf("%T: event %q (%v), want status", c.u, typ, ok)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(data, &fields); err != nil {
			t.Fatal(err)
		}
		var line, kind, update, turnID string
		for k, p := range map[string]*string{"line": &line, "kind": &kind, "update": &update, "turn_id": &turnID} {
			_ = json.Unmarshal(fields[k], p)
		}
		if line != c.line || kind != c.kind || update != turn.KindOf(c.u) || turnID != "t1" {
			t.Errorf("%s: line %q kind %q update %q turn %q; want %q %q %q", data, line, kind, update, turnID, c.line, c.kind, turn.KindOf(c.u))
		}
		back, err := turn.DecodeUpdate(update, fields[update])
		if err != nil || !reflect.DeepEqual(back, turn.Update(c.u)) {
			t.Errorf("%s: decoded %#v (%v), want %#v", data, back, err, c.u)
		}
	}
	// A decision another update says (here: the fallback that follows) is
	// no status event of its own.
	if _, _, ok := updateEvent("t1", turn.CallFailed{Decision: turn.DecisionFallback}); ok {
		t.Error("a fallback decision made a status event of its own")
	}
}
