package turn_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// counterTool counts its runs; readOnly says how it is declared.
func counterTool(name string, readOnly bool, n *atomic.Int32) tool.Tool {
	return testenv.MustFunc(tool.Info{Name: name, Description: "counts", Parameters: testenv.ObjectSchema(`{}`), ReadOnly: readOnly},
		func(context.Context, json.RawMessage) (tool.Result, error) {
			n.Add(1)
			return tool.Result{Content: name + " ran"}, nil
		})
}

// A turn cut off inside a tool round by its process's death is continued
// from its stored rows and the ledger: the call with a result is not run
// again, a never-started call runs, a started read-only call runs again, a
// started call that changes things is not re-run (its result says it may
// have taken effect), a started write_file says which state the file is
// in; then the model is called again and the turn completes, with the
// iterations it used before counted.
func TestResumeFinishesCutOffToolRound(t *testing.T) {
	var doneN, freshN, readN, effectN atomic.Int32
	env := testenv.New(t, testenv.Options{ExtraTools: []tool.Tool{
		counterTool("done_before", false, &doneN), counterTool("fresh", false, &freshN),
		counterTool("look", true, &readN), counterTool("effect", false, &effectN),
	}})
	ctx := t.Context()
	turnID := "t-cut"
	sess := env.Session.ID
	// What the dead process left: the user's row, the assistant's calls, one
	// result; ledger records for the calls it had started.
	if err := os.WriteFile(filepath.Join(env.Workspace, "kept.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	calls := []llm.ToolCall{
		{ID: "c1", Name: "done_before", Arguments: "{}"},
		{ID: "c2", Name: "look", Arguments: "{}"},
		{ID: "c3", Name: "effect", Arguments: "{}"},
		{ID: "c4", Name: "write_file", Arguments: `{"path":"kept.txt","content":"new\n"}`},
		{ID: "c5", Name: "fresh", Arguments: "{}"},
	}
	asst := llm.Message{Role: llm.RoleAssistant, ToolCalls: calls}
	rows := []*store.Message{
		{Message: llm.NewText(llm.RoleUser, "do five things"), TurnID: turnID},
		{Message: asst, TurnID: turnID},
		{Message: llm.NewToolResult(calls[0], "done_before ran", false), TurnID: turnID},
	}
	if err := env.Store.Append(ctx, store.Fence{SessionID: sess}, rows...); err != nil {
		t.Fatal(err)
	}
	path, _ := filepath.EvalSymlinks(filepath.Join(env.Workspace, "kept.txt"))
	for _, r := range []store.ToolCallRecord{
		{CallID: "c1", Tool: "done_before"}, {CallID: "c2", Tool: "look"}, {CallID: "c3", Tool: "effect"},
		{CallID: "c4", Tool: "write_file", Path: path, BeforeHash: turn.HashBytes([]byte("old\n"))},
	} {
		r.SessionID, r.TurnID, r.Node = sess, turnID, "dead-node"
		if err := env.Store.ToolStarted(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Store.ToolFinished(ctx, &store.ToolCallRecord{SessionID: sess, CallID: "c1", ResultID: rows[2].ID}); err != nil {
		t.Fatal(err)
	}
	env.Srv.Script(fakellm.Text("all five handled"))
	var handoffs []turn.Handoff
	res := env.RunWith(ctx, agent.Input{TurnID: turnID, Resume: true,
		Handoff: &turn.Handoff{From: "dead-node", To: "here", Reason: "lease expired", Count: 1, Max: 2},
		Hooks: turn.Hooks{Sink: func(u turn.Update) {
			if h, ok := u.(turn.Handoff); ok {
				handoffs = append(handoffs, h)
			}
		}}})
	if res.Exit != turn.ExitCompleted || res.FinalText != "all five handled" {
		t.Fatalf("exit %s %q: %s", res.Exit, res.FinalText, res.Explanation)
	}
	if got := [4]int32{doneN.Load(), readN.Load(), effectN.Load(), freshN.Load()}; got != [4]int32{0, 1, 0, 1} {
		t.Fatalf("runs done_before, look, effect, fresh = %v; want [0 1 0 1]", got)
	}
	if b, _ := os.ReadFile(path); string(b) != "old\n" {
		t.Fatalf("write_file was re-run: the file holds %q", b)
	}
	if len(handoffs) != 1 || handoffs[0].From != "dead-node" {
		t.Fatalf("handoff updates %+v; want one from dead-node", handoffs)
	}
	if res.Iterations != 2 {
		t.Errorf("iterations = %d; want 2 (the stored tool-call answer and the new call)", res.Iterations)
	}
	results := map[string]store.Message{}
	n := 0
	for _, r := range env.Rows() {
		if r.Role == llm.RoleTool {
			results[r.ToolCallID] = r
			n++
		}
	}
	if n != 5 {
		t.Fatalf("%d tool results; want exactly one per call (5)", n)
	}
	if r := results["c3"]; !r.IsError || !strings.Contains(r.Text(), "may or may not have taken effect") {
		t.Errorf("effect's result %q; want it to say it may or may not have taken effect", r.Text())
	}
	if r := results["c4"]; !r.IsError || !strings.Contains(r.Text(), "exactly as it was before the call") {
		t.Errorf("write_file's result %q; want it to say the file is unchanged", r.Text())
	}
	recs, err := env.Store.ToolCalls(ctx, sess, turnID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.State != store.ToolCallFinished || r.ResultID != results[r.CallID].ID {
			t.Errorf("ledger %s: %s, result %d; want finished at row %d", r.CallID, r.State, r.ResultID, results[r.CallID].ID)
		}
	}
	if len(recs) != 5 {
		t.Errorf("%d ledger records; want 5", len(recs))
	}
	reqs := env.Srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls; want 1", len(reqs))
	}
	env.NoViolations()
}

// A turn cut off while its model call streamed (its last row is the
// user's) makes the call again; one whose answer was stored ends at once.
func TestResumePendingCallAndFinishedTurn(t *testing.T) {
	env := testenv.New(t, testenv.Options{})
	ctx := t.Context()
	if err := env.Store.Append(ctx, store.Fence{SessionID: env.Session.ID},
		&store.Message{Message: llm.NewText(llm.RoleUser, "hello"), TurnID: "t1"}); err != nil {
		t.Fatal(err)
	}
	env.Srv.Script(fakellm.Text("hi there"))
	res := env.RunWith(ctx, agent.Input{TurnID: "t1", Resume: true})
	if res.Exit != turn.ExitCompleted || res.FinalText != "hi there" || len(env.Srv.Requests()) != 1 {
		t.Fatalf("pending call: exit %s %q after %d calls", res.Exit, res.FinalText, len(env.Srv.Requests()))
	}
	res = env.RunWith(ctx, agent.Input{TurnID: "t1", Resume: true})
	if res.Exit != turn.ExitCompleted || res.FinalText != "hi there" || len(env.Srv.Requests()) != 1 {
		t.Fatalf("finished turn: exit %s %q after %d calls; want no new call", res.Exit, res.FinalText, len(env.Srv.Requests()))
	}
	if rows := env.Rows(); len(rows) != 2 {
		t.Fatalf("rows %v; want user, answer", testenv.Roles(rows))
	}
	env.NoViolations()
}
