//go:build unix

package crashtest

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

const delegateSlowPrompt = "Delegate the slow job."

// delegatingModel hands the slow job to a subagent; the subagent, and
// every other turn, gets the default model's answers.
func delegatingModel(r fakellm.Request) fakellm.Step {
	prompt, round := currentTurn(r.Messages)
	if !strings.Contains(r.System, "You are a subagent") && strings.Contains(prompt, delegateSlowPrompt) {
		if round == 0 {
			args, _ := json.Marshal(map[string]any{"task": slowPrompt, "toolset": []string{"shell"}})
			return fakellm.Calls(fakellm.ToolCall("delegate", string(args))).WithLatency(stepLatency)
		}
		return fakellm.Text("The subagent finished.").WithLatency(stepLatency)
	}
	return model(r)
}

// Ctrl+C in `talaria run` while a subagent's tool runs: the subagent's
// command is killed, the child session and the parent both finalize
// (each call paired; the parent's result says the subagent was
// interrupted), the process exits 130, and the session continues.
func TestRunCtrlCStopsSubagent(t *testing.T) {
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	srv.SetDefault(delegatingModel)
	h := newHome(t, srv)
	sid := h.newSession()
	p := h.start("run", "--session", sid, "--yes", "--quiet", "--json", delegateSlowPrompt)
	interruptRunning(t, h, p)
	kids, err := h.reader.ChildSessions(context.Background(), sid)
	if err != nil || len(kids) != 1 {
		t.Fatalf("child sessions %d, %v", len(kids), err)
	}
	child := kids[0]
	if child.Kind != store.SessionSubagent || child.Live() || child.EndReason != string(turn.ExitInterrupted) {
		t.Errorf("child %s: kind %q live %t end %q", child.ID, child.Kind, child.Live(), child.EndReason)
	}
	// The subagent's shell is gone and its call paired, as for a direct one.
	slowJobStopped(t, h, child.ID)
	rows := h.rows(sid)
	var roles []string
	for _, r := range rows {
		roles = append(roles, string(r.Role))
	}
	if !slices.Equal(roles, []string{"user", "assistant", "tool"}) {
		t.Fatalf("parent rows %v, want user, delegate call, result", roles)
	}
	if r := rows[2]; !strings.Contains(r.Text(), "interrupted") || !strings.Contains(r.Text(), child.ID) {
		t.Errorf("parent's delegate result %q does not say subagent %s was interrupted", r.Text(), child.ID)
	}
	srv.Reset()
	if c, code := h.run("run", "--session", sid, "--quiet", continuePrompt); code != 0 {
		t.Fatalf("continue: exit %d\n%s", code, c.stderr)
	}
	checkWire(t, srv)
}
