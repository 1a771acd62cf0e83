package testenv

import (
	"fmt"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/guard"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/turn"
)

// CheckWire fails t on a strict-validation violation the model server
// recorded or a request WireProblems finds fault with.
func CheckWire(t testing.TB, srv *fakellm.Server) {
	t.Helper()
	for _, v := range srv.Violations() {
		t.Errorf("fakellm strict validation: %s", v)
	}
	for i, r := range srv.Requests() {
		for _, p := range WireProblems(r.Messages) {
			t.Errorf("request %d: %s", i, p)
		}
	}
}

// WireProblems checks a request's conversation more strictly than either
// provider does, so a repair that only one wire format would forgive still
// shows: it starts with a user message; user and assistant turns alternate
// (a tool group counts as the user side); every tool call is answered
// exactly once, right after its assistant message; no result is an orphan;
// and no assistant message without tool calls is blank.
func WireProblems(msgs []fakellm.Msg) []string {
	var out []string
	bad := func(i int, format string, a ...any) {
		out = append(out, fmt.Sprintf("message %d: ", i)+fmt.Sprintf(format, a...))
	}
	if len(msgs) == 0 {
		return []string{"no messages"}
	}
	if msgs[0].Role != "user" {
		bad(0, "starts with %s, not user", msgs[0].Role)
	}
	open := map[string]bool{} // calls of the last assistant still unanswered
	prev := ""                // role of the previous non-tool message, or "tool"
	for i, m := range msgs {
		switch m.Role {
		case "tool":
			if !open[m.ToolCallID] {
				bad(i, "tool result %q answers no open call", m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			prev = "tool"
			continue
		case "user", "assistant":
		default:
			bad(i, "unexpected role %q", m.Role)
			continue
		}
		if len(open) > 0 {
			bad(i, "%s message while calls %v are unanswered", m.Role, keys(open))
			clear(open)
		}
		if m.Role == prev {
			bad(i, "two %s messages in a row", m.Role)
		}
		if m.Role == "assistant" {
			if len(m.ToolCalls) == 0 && strings.TrimSpace(m.Text) == "" {
				bad(i, "blank assistant message")
			}
			for _, c := range m.ToolCalls {
				if open[c.ID] {
					bad(i, "tool call id %q used twice", c.ID)
				}
				open[c.ID] = true
			}
		}
		prev = m.Role
	}
	if len(open) > 0 {
		bad(len(msgs), "calls %v are never answered", keys(open))
	}
	return out
}

// ScaffoldLeft names engine scaffolding (continuation nudges, budget
// notices) found in msgs. Once a turn is over, none may be replayed.
func ScaffoldLeft(msgs []fakellm.Msg) []string {
	var out []string
	for i, m := range msgs {
		for _, s := range []string{guard.ContinueNudge, turn.BudgetNotice, turn.LengthContinueNudge, turn.LengthTooLargeNudge} {
			if strings.Contains(m.Text, s) {
				out = append(out, fmt.Sprintf("message %d (%s) carries scaffolding %q", i, m.Role, s))
			}
		}
	}
	return out
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
