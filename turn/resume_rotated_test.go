package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// freezable is the SQLite store as a process sees it that stops dead: once
// frozen its lease renewals never return (until thawed, then fail), so the
// lease expires as it would after kill -9.
type freezable struct {
	*sqlite.Store
	frozen atomic.Bool
	thaw   chan struct{}
}

func (f *freezable) RefreshLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if f.frozen.Load() {
		<-f.thaw
		return store.Lease{}, store.ErrLeaseLost
	}
	return f.Store.RefreshLease(ctx, l, ttl)
}

// A turn that rotated its session mid-turn (a context overflow, then a
// compression that continues the session in a child) and whose process
// then died inside a tool that changes things is continued by another
// process on the rotated session: it resumes the turn from the child's
// rows and ledger (the tool not re-run: its result says it may or may not
// have taken effect), completes there, and the dead process's late result
// is fenced out.
func TestResumeAfterRotation(t *testing.T) {
	var frozen *freezable
	var dieN atomic.Int32
	thaw := make(chan struct{})
	die := testenv.MustFunc(tool.Info{Name: "die", Description: "changes things", Parameters: testenv.ObjectSchema(`{}`)},
		func(context.Context, json.RawMessage) (tool.Result, error) {
			dieN.Add(1)
			frozen.frozen.Store(true) // the process stops here
			<-thaw
			return tool.Result{Content: "died late"}, nil
		})
	env := testenv.New(t, testenv.Options{NoBuiltins: true,
		ExtraTools: []tool.Tool{testenv.FetchTool(fetchSize), die},
		Configure: func(c *agent.Config) {
			testenv.WithContext(testenv.ContextOptions{Window: 100_000, Rotate: true})(c)
			frozen = &freezable{Store: c.Store.(*sqlite.Store), thaw: thaw}
			c.Store = frozen
			c.Holder, c.LeaseTTL = "dead:1:a", 300*time.Millisecond
		}})
	ctx := t.Context()
	root := env.Session.ID
	// Earlier turns, so the compression has a middle to summarize.
	for i := range 6 {
		rows := []*store.Message{
			{Message: llm.NewText(llm.RoleUser, fmt.Sprintf("earlier %d", i)), TurnID: fmt.Sprintf("t-old%d", i)},
			{Message: llm.NewText(llm.RoleAssistant, strings.Repeat("words ", 300)), TurnID: fmt.Sprintf("t-old%d", i)},
		}
		if err := env.Store.Append(ctx, store.Fence{SessionID: root}, rows...); err != nil {
			t.Fatal(err)
		}
	}
	var overflowed atomic.Bool
	env.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
		if r.Model == testenv.SummaryModel {
			return fakellm.Text("## Task\nrotate and go on. SUMMARY\n## State\nfetched\n## Pending asks\nnone\n## Remaining work\ndie once")
		}
		last := r.Messages[len(r.Messages)-1]
		switch {
		case last.Role == "user" && last.Text == "go":
			return fakellm.Calls(fakellm.ToolCall("fetch", `{"n":1}`))
		case last.Role == "tool" && strings.Contains(last.Text, "RESULT-1") && !overflowed.Swap(true):
			return overflowError("openai", 120_000, 100_000)
		case last.Role == "tool" && strings.Contains(last.Text, "RESULT-1"):
			return fakellm.Calls(fakellm.ToolCall("die", `{}`))
		case last.Role == "tool" && strings.Contains(last.Text, "may or may not have taken effect"):
			return fakellm.Text("finished after the handoff")
		}
		return fakellm.Text("unexpected: " + last.Role + " " + last.Text)
	})

	const turnID = "t-rot"
	first := make(chan turn.Result, 1)
	go func() {
		res, _ := env.Agent.RunTurn(context.WithoutCancel(ctx), root, agent.Input{Text: "go", TurnID: turnID})
		first <- res
	}()
	defer func() {
		select {
		case <-thaw:
		default:
			close(thaw)
		}
	}()
	if !testenv.Eventually(time.Minute, func() bool { return dieN.Load() == 1 }) {
		t.Fatalf("the turn did not reach its tool after the rotation; rows %v", testenv.Roles(env.Rows()))
	}
	tip, err := store.ResolveTip(ctx, env.Store, root)
	if err != nil || tip.ID == root || tip.ParentID != root {
		t.Fatalf("tip %+v (%v): want the turn rotated into a child of %s", tip, err, root)
	}

	// Another process on the same database continues the turn once the
	// dead one's lease has expired.
	cfg := env.Config
	cfg.Store, cfg.Holder = env.Store, "live:2:b"
	other, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var res turn.Result
	if !testenv.Eventually(time.Minute, func() bool {
		res, err = other.RunTurn(ctx, root, agent.Input{TurnID: turnID, Resume: true,
			Handoff: &turn.Handoff{From: "dead:1:a", To: "live:2:b", Reason: "lease expired", Count: 1, Max: 2}})
		var held *store.LeaseHeldError
		return !errors.As(err, &held)
	}) {
		t.Fatal("the dead process's lease never expired")
	}
	if err != nil || res.Exit != turn.ExitCompleted || res.FinalText != "finished after the handoff" {
		t.Fatalf("resume: %v, exit %s %q: %s", err, res.Exit, res.FinalText, res.Explanation)
	}
	if res.SessionID != tip.ID {
		t.Errorf("the turn continued in %s; want the rotated session %s", res.SessionID, tip.ID)
	}
	close(thaw)
	if r := <-first; r.Exit == turn.ExitCompleted {
		t.Errorf("the dead process's turn completed (%q); want it fenced out", r.FinalText)
	}
	if n := dieN.Load(); n != 1 {
		t.Errorf("die ran %d times; want once", n)
	}
	rows := env.RowsOf(tip.ID, false)
	results, uncertain := 0, 0
	for _, r := range rows {
		if r.Role == llm.RoleTool && r.TurnID == turnID {
			for _, c := range rows {
				for _, tc := range c.ToolCalls {
					if tc.ID == r.ToolCallID && tc.Name == "die" {
						results++
						if strings.Contains(r.Text(), "may or may not have taken effect") {
							uncertain++
						}
					}
				}
			}
		}
	}
	if results != 1 || uncertain != 1 {
		t.Errorf("die has %d results, %d uncertain in the rotated session; want one, uncertain: %v", results, uncertain, testenv.Roles(rows))
	}
	if last := rows[len(rows)-1]; last.Role != llm.RoleAssistant || last.Text() != "finished after the handoff" {
		t.Errorf("the rotated session ends %s %q; want the continued turn's answer", last.Role, last.Text())
	}
	env.NoViolations()
}
