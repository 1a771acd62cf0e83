package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// Every call of a tool round is in the ledger before it runs and finished
// after its result row is stored: the node and fence that ran it, its
// arguments' hash, the result row's id, and for write_file and edit_file
// the file's content hash before and after.
func TestLedgerRecordsEveryCall(t *testing.T) {
	env := testenv.New(t, testenv.Options{})
	env.Srv.Script(
		fakellm.Calls(fakellm.ToolCall("write_file", `{"path":"notes.txt","content":"one\n"}`)),
		fakellm.Calls(fakellm.ToolCall("edit_file", `{"path":"notes.txt","old_string":"one","new_string":"two"}`),
			fakellm.ToolCall("read_file", `{"path":"notes.txt"}`)),
		fakellm.Text("done"),
	)
	res := env.Run("write, edit, read")
	if res.Exit != turn.ExitCompleted {
		t.Fatalf("exit %s: %s", res.Exit, res.Explanation)
	}
	recs, err := env.Store.ToolCalls(t.Context(), env.Session.ID, res.TurnID)
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]store.Message{}
	calls := map[string]llm.ToolCall{}
	for _, r := range env.Rows() {
		if r.Role == llm.RoleTool {
			results[r.ToolCallID] = r
		}
		for _, c := range r.ToolCalls {
			calls[c.ID] = c
		}
	}
	if len(recs) != 3 || recs[0].Tool != "write_file" || recs[1].Tool != "edit_file" || recs[2].Tool != "read_file" {
		t.Fatalf("ledger = %+v; want write_file, edit_file, read_file", recs)
	}
	path, _ := filepath.EvalSymlinks(filepath.Join(env.Workspace, "notes.txt"))
	sum := func(s string) string { return turn.HashBytes([]byte(s)) }
	want := []struct{ path, before, after string }{
		{path, store.HashAbsent, sum("one\n")},
		{path, sum("one\n"), sum("two\n")},
		{"", "", ""},
	}
	for i, r := range recs {
		if r.State != store.ToolCallFinished || r.Node == "" || r.Node != recs[0].Node || r.Fence == 0 || r.TurnID != res.TurnID {
			t.Errorf("record %d = %+v; want finished by this process under a fence", i, r)
		}
		if row, ok := results[r.CallID]; !ok || row.ID != r.ResultID {
			t.Errorf("record %d points at result row %d; the stored result of %s is row %d", i, r.ResultID, r.CallID, row.ID)
		}
		if r.ArgsHash != turn.HashBytes([]byte(calls[r.CallID].Arguments)) {
			t.Errorf("record %d args hash %s does not match the call's arguments", i, r.ArgsHash)
		}
		if r.Path != want[i].path || r.BeforeHash != want[i].before || r.AfterHash != want[i].after {
			t.Errorf("record %d file %q %s -> %s; want %q %s -> %s", i, r.Path, r.BeforeHash, r.AfterHash,
				want[i].path, want[i].before, want[i].after)
		}
	}
}

// refusingLedger is the real store whose ledger refuses every start.
type refusingLedger struct {
	*sqlite.Store
	err error
}

func (r refusingLedger) ToolStarted(context.Context, *store.ToolCallRecord) error { return r.err }

// A call whose start cannot be recorded does not run: a node continuing
// the turn could not tell whether it had. The turn ends persistence_failed
// (lease_lost when the fence refused it) and the session stays valid.
func TestLedgerRefusedStartRunsNothing(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		exit turn.Exit
	}{
		{"disk", errors.New("disk I/O error"), turn.ExitPersistenceFailed},
		{"fence", &store.Error{Op: "tool started", Kind: store.KindLeaseLost, Err: errors.New("token moved")}, turn.ExitLeaseLost},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ran atomic.Int32
			effect := testenv.MustFunc(tool.Info{Name: "effect", Description: "has a side effect", Parameters: testenv.ObjectSchema(`{}`)},
				func(context.Context, json.RawMessage) (tool.Result, error) {
					ran.Add(1)
					return tool.Result{Content: "did it"}, nil
				})
			env := testenv.New(t, testenv.Options{ExtraTools: []tool.Tool{effect}, Configure: func(cfg *agent.Config) {
				cfg.Store = refusingLedger{Store: cfg.Store.(*sqlite.Store), err: c.err}
			}})
			env.Srv.Script(fakellm.Calls(fakellm.ToolCall("effect", `{}`)), fakellm.Text("done"))
			res := env.Run("do it")
			if res.Exit != c.exit || ran.Load() != 0 {
				t.Fatalf("exit %s, tool ran %d times; want %s and no run", res.Exit, ran.Load(), c.exit)
			}
			env.NoViolations()
		})
	}
}
