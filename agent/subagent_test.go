package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// pricedModel is in the catalogue, so costs are exact numbers.
const pricedModel = "gpt-4o"

func delegateCall(task string, toolset ...string) fakellm.Call {
	args := map[string]any{"task": task}
	if len(toolset) > 0 {
		args["toolset"] = toolset
	}
	b, _ := json.Marshal(args)
	return fakellm.ToolCall(agent.DelegateToolName, string(b))
}

// isChild tells a subagent's request from its parent's by the system
// prompt every subagent gets.
func isChild(r fakellm.Request) bool { return strings.Contains(r.System, "You are a subagent") }

func last(r fakellm.Request) fakellm.Msg { return r.Messages[len(r.Messages)-1] }

func firstUser(r fakellm.Request) string {
	for _, m := range r.Messages {
		if m.Role == "user" {
			return m.Text
		}
	}
	return ""
}

func newDelegEnv(t *testing.T, api string, extra ...tool.Tool) *testenv.Env {
	return testenv.New(t, testenv.Options{API: api, Model: pricedModel, ExtraTools: extra,
		Configure: func(c *agent.Config) { c.Subagents.Enabled = true }})
}

func children(t *testing.T, e *testenv.Env, id string) []store.Session {
	t.Helper()
	kids, err := e.Store.ChildSessions(context.Background(), id)
	if err != nil {
		t.Fatalf("ChildSessions: %v", err)
	}
	return kids
}

// checkTranscript fails when rows do not form a valid conversation.
func checkTranscript(t *testing.T, what string, rows []store.Message) {
	t.Helper()
	var msgs []fakellm.Msg
	for _, r := range rows {
		if r.Kind.DisplayOnly() {
			continue
		}
		text := r.Text()
		if r.APIContent != "" {
			text = r.APIContent // what is sent in place of the display text
		}
		m := fakellm.Msg{Role: string(r.Role), Text: text, ToolCallID: r.ToolCallID}
		for _, c := range r.ToolCalls {
			m.ToolCalls = append(m.ToolCalls, fakellm.Call{ID: c.ID, Name: c.Name})
		}
		msgs = append(msgs, m)
	}
	for _, p := range testenv.WireProblems(msgs) {
		t.Errorf("%s transcript: %s", what, p)
	}
}

// TestDelegateParallel: a parent delegates two tasks in one round; both
// children run at the same time (each child's reply waits until both
// children's requests arrived), each is a real subagent session with a
// valid transcript, the parent sees both answers, and the children's spend
// is rolled up into the parent's turn exactly while the parent's own usage
// stays its own.
func TestDelegateParallel(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			e := newDelegEnv(t, api)
			var mu sync.Mutex
			inflight := 0
			both := make(chan struct{})
			e.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
				if isChild(r) {
					mu.Lock()
					inflight++
					if inflight == 2 {
						close(both)
					}
					mu.Unlock()
					select {
					case <-both:
					case <-time.After(10 * time.Second):
						return fakellm.Text("children did not run in parallel").WithUsage(10, 5)
					}
					task := firstUser(r)
					return fakellm.Text("answer for "+task).WithUsage(1000, 50)
				}
				if last(r).Role == "user" {
					return fakellm.Calls(delegateCall("alpha"), delegateCall("beta")).WithUsage(500, 20)
				}
				var got []string
				for _, m := range r.Messages {
					if m.Role == "tool" {
						got = append(got, m.Text)
					}
				}
				return fakellm.Text("combined: "+strings.Join(got, " | ")).WithUsage(700, 30)
			})
			var started, finished []turn.SubagentEvent
			var evMu sync.Mutex
			res := e.RunWith(context.Background(), agent.Input{Text: "split the work", Hooks: turn.Hooks{
				SubagentStarted:  func(ev turn.SubagentEvent) { evMu.Lock(); started = append(started, ev); evMu.Unlock() },
				SubagentFinished: func(ev turn.SubagentEvent) { evMu.Lock(); finished = append(finished, ev); evMu.Unlock() },
			}})
			if res.Exit != turn.ExitCompleted {
				t.Fatalf("exit %s: %s", res.Exit, res.Explanation)
			}
			e.NoViolations()
			for _, want := range []string{"answer for alpha", "answer for beta"} {
				if !strings.Contains(res.FinalText, want) {
					t.Errorf("parent's answer %q lacks %q", res.FinalText, want)
				}
			}
			if strings.Contains(res.FinalText, "not in parallel") {
				t.Error("the two children did not run at the same time")
			}
			kids := children(t, e, e.Session.ID)
			if len(kids) != 2 {
				t.Fatalf("child sessions = %d, want 2", len(kids))
			}
			var sum agent.Spend
			model := e.Agent.Catalogue().Lookup(pricedModel)
			for _, k := range kids {
				if k.Kind != store.SessionSubagent || k.ParentID != e.Session.ID || k.Live() || k.EndReason != string(turn.ExitCompleted) {
					t.Errorf("child %s: kind %q parent %q live %t end %q", k.ID, k.Kind, k.ParentID, k.Live(), k.EndReason)
				}
				rows := e.RowsOf(k.ID, false)
				checkTranscript(t, "child "+k.ID, rows)
				if got := testenv.Roles(rows); fmt.Sprint(got) != "[user assistant]" {
					t.Errorf("child rows = %v", got)
				}
				want, _ := model.Cost(llm.Usage{InputTokens: 1000, OutputTokens: 50, Reported: true})
				if math.Abs(k.CostUSD-want) > 1e-12 || k.Usage.InputTokens != 1000 || k.APICalls != 1 {
					t.Errorf("child %s: cost %v usage %+v calls %d, want cost %v", k.ID, k.CostUSD, k.Usage, k.APICalls, want)
				}
				sum.CostUSD += k.CostUSD
				sum.Usage.Add(k.Usage)
			}
			s := res.Subagents
			if s == nil || s.Count != 2 || s.APICalls != 2 || s.Usage.InputTokens != 2000 || s.Usage.OutputTokens != 100 {
				t.Fatalf("turn subagents = %+v", s)
			}
			if math.Abs(s.CostUSD-sum.CostUSD) > 1e-12 {
				t.Fatalf("rolled-up cost %v, children's sessions %v", s.CostUSD, sum.CostUSD)
			}
			// The parent's own usage is its two calls only.
			if res.Usage.InputTokens != 1200 || res.APICalls != 2 {
				t.Fatalf("parent usage %+v calls %d, want its own 1200 input tokens in 2 calls", res.Usage, res.APICalls)
			}
			if math.Abs(res.TotalCostUSD()-(res.CostUSD+sum.CostUSD)) > 1e-12 {
				t.Fatalf("TotalCostUSD %v", res.TotalCostUSD())
			}
			spend, err := agent.SpendOf(context.Background(), e.Store, e.Session.ID)
			if err != nil {
				t.Fatal(err)
			}
			if spend.Own.Usage.InputTokens != 1200 || spend.Subagents.Sessions != 2 || spend.Subagents.Usage.InputTokens != 2000 ||
				math.Abs(spend.Total().CostUSD-res.TotalCostUSD()) > 1e-12 {
				t.Fatalf("session spend %+v", spend)
			}
			if len(started) != 2 || len(finished) != 2 {
				t.Fatalf("hooks: %d started, %d finished", len(started), len(finished))
			}
			for _, ev := range finished {
				if ev.Exit != turn.ExitCompleted || ev.ParentSessionID != e.Session.ID || ev.ToolCallID == "" {
					t.Errorf("finished event %+v", ev)
				}
			}
		})
	}
}

// TestDelegateInterrupt: the parent is cancelled while a child's tool
// runs; the child's tool stops, both turns finalize with valid
// transcripts, the parent's tool result says the child was interrupted,
// and the parent session takes its next turn normally.
func TestDelegateInterrupt(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			running := make(chan struct{})
			stopped := make(chan struct{})
			block := testenv.MustFunc(tool.Info{Name: "block", Description: "waits", Parameters: testenv.ObjectSchema(`{}`), ReadOnly: true},
				func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
					close(running)
					<-ctx.Done()
					close(stopped)
					return tool.Result{Content: "stopped", IsError: true}, nil
				})
			e := newDelegEnv(t, api, block)
			e.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
				switch {
				case isChild(r):
					return fakellm.Calls(fakellm.ToolCall("block", `{}`))
				case last(r).Role == "user" && last(r).Text == "go on":
					return fakellm.Text("resumed fine")
				default:
					return fakellm.Calls(delegateCall("wait for it", "block"))
				}
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type out struct {
				res turn.Result
				at  time.Time
			}
			done := make(chan out, 1)
			go func() {
				res, _ := e.Agent.RunTurn(ctx, e.Session.ID, agent.Input{Text: "delegate and wait"})
				done <- out{res, time.Now()}
			}()
			select {
			case <-running:
			case <-time.After(10 * time.Second):
				t.Fatal("the child's tool never started")
			}
			cancelled := time.Now()
			cancel()
			var o out
			select {
			case o = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the parent turn did not return after the interrupt")
			}
			<-stopped // the child's tool saw its context end
			t.Logf("parent returned %v after the interrupt", o.at.Sub(cancelled))
			if d := o.at.Sub(cancelled); d > 5*time.Second {
				t.Errorf("the interrupt took %v to stop parent and child", d)
			}
			if o.res.Exit != turn.ExitInterrupted {
				t.Fatalf("parent exit %s", o.res.Exit)
			}
			rows := e.Rows()
			checkTranscript(t, "parent", rows)
			var result string
			for _, r := range rows {
				if r.Role == llm.RoleTool {
					result = r.Text()
				}
			}
			if !strings.Contains(result, "interrupted") {
				t.Errorf("parent's tool result %q does not say the child was interrupted", result)
			}
			kids := children(t, e, e.Session.ID)
			if len(kids) != 1 || kids[0].Live() {
				t.Fatalf("children %+v", kids)
			}
			crow := e.RowsOf(kids[0].ID, false)
			checkTranscript(t, "child", crow)
			if got := testenv.Roles(crow); fmt.Sprint(got) != "[user assistant tool]" {
				t.Errorf("child rows %v", got)
			}
			if res := e.Run("go on"); res.Exit != turn.ExitCompleted || res.FinalText != "resumed fine" {
				t.Fatalf("resume: %s %q %s", res.Exit, res.FinalText, res.Explanation)
			}
			e.NoViolations()
		})
	}
}

// TestDelegateChildFails: a child whose provider fails (billing, context
// overflow) gives the parent a tool result with the failure class and
// advice, and the parent goes on to its answer.
func TestDelegateChildFails(t *testing.T) {
	cases := []struct {
		name, class string
		step        fakellm.Step
	}{
		{"billing", "billing", fakellm.HTTPError(402, "billing_error", "Your credit balance is too low to access the API.")},
		{"overflow", "context_overflow", fakellm.HTTPError(400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum")},
	}
	for _, api := range testenv.APIs {
		for _, c := range cases {
			t.Run(api+"/"+c.name, func(t *testing.T) {
				e := newDelegEnv(t, api)
				e.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
					switch {
					case isChild(r):
						return c.step
					case last(r).Role == "user":
						return fakellm.Calls(delegateCall("doomed"))
					default:
						return fakellm.Text("the subagent failed; carrying on")
					}
				})
				res := e.Run("try it")
				if res.Exit != turn.ExitCompleted {
					t.Fatalf("parent exit %s: %s", res.Exit, res.Explanation)
				}
				var result store.Message
				for _, r := range e.Rows() {
					if r.Role == llm.RoleTool {
						result = r
					}
				}
				text := result.Text()
				if !result.IsError || !strings.Contains(text, "failure_reason: "+c.class) || !strings.Contains(text, "advice: ") {
					t.Fatalf("parent's tool result (error %t):\n%s", result.IsError, text)
				}
				kids := children(t, e, e.Session.ID)
				if len(kids) != 1 {
					t.Fatalf("children = %d", len(kids))
				}
				checkTranscript(t, "child", e.RowsOf(kids[0].ID, false))
				e.NoViolations()
			})
		}
	}
}

// TestDelegateRefused: a toolset with a tool the parent lacks, or with
// delegate beyond the depth limit, is refused before any session exists.
func TestDelegateRefused(t *testing.T) {
	for _, api := range testenv.APIs {
		for _, ts := range [][]string{{"read_file", "launch_missiles"}, {agent.DelegateToolName}} {
			t.Run(api+"/"+strings.Join(ts, "+"), func(t *testing.T) {
				e := newDelegEnv(t, api)
				e.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
					if isChild(r) {
						t.Error("a refused child reached the model")
						return fakellm.Text("no")
					}
					if last(r).Role == "user" {
						return fakellm.Calls(delegateCall("overreach", ts...))
					}
					return fakellm.Text("ok, refused")
				})
				res := e.Run("try")
				if res.Exit != turn.ExitCompleted {
					t.Fatalf("exit %s", res.Exit)
				}
				var text string
				for _, r := range e.Rows() {
					if r.Role == llm.RoleTool {
						text = r.Text()
						if !r.IsError {
							t.Error("refusal is not an error result")
						}
					}
				}
				if !strings.Contains(text, "refused") {
					t.Fatalf("tool result %q", text)
				}
				if kids := children(t, e, e.Session.ID); len(kids) != 0 {
					t.Fatalf("a refused delegation created %d sessions", len(kids))
				}
				if res.Subagents != nil {
					t.Fatalf("subagents %+v", res.Subagents)
				}
			})
		}
	}
}

// refreshFails is the real store with the lease refreshes of one session
// failing once armed, as when a database is locked for too long.
type refreshFails struct {
	store.Store
	mu      sync.Mutex
	session string
}

func (r *refreshFails) arm(id string) { r.mu.Lock(); r.session = id; r.mu.Unlock() }

func (r *refreshFails) RefreshLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	r.mu.Lock()
	fail := r.session == l.SessionID
	r.mu.Unlock()
	if fail {
		return l, testenv.StoreError(store.KindLocked)
	}
	return r.Store.RefreshLease(ctx, l, ttl)
}

// TestParentLeaseLossStopsChildren: a running child holds its own
// session's lease; when the parent loses its lease, the child is
// interrupted (its own lease was fine, so it is not "lease lost") and
// finalizes with a valid transcript, and the parent ends lease_lost.
func TestParentLeaseLossStopsChildren(t *testing.T) {
	running := make(chan struct{})
	block := testenv.MustFunc(tool.Info{Name: "block", Description: "waits", Parameters: testenv.ObjectSchema(`{}`), ReadOnly: true},
		func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			close(running)
			<-ctx.Done()
			return tool.Result{Content: "stopped", IsError: true}, nil
		})
	var rf *refreshFails
	e := testenv.New(t, testenv.Options{ExtraTools: []tool.Tool{block}, Configure: func(c *agent.Config) {
		rf = &refreshFails{Store: c.Store.(store.Store)}
		c.Store = rf
		c.Subagents.Enabled = true
		c.LeaseTTL = 300 * time.Millisecond
		c.LeaseRefresh = 50 * time.Millisecond
	}})
	e.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
		if isChild(r) {
			return fakellm.Calls(fakellm.ToolCall("block", `{}`))
		}
		return fakellm.Calls(delegateCall("hold on", "block"))
	})
	var finished []turn.SubagentEvent
	var mu sync.Mutex
	done := make(chan turn.Result, 1)
	go func() {
		done <- e.RunWith(context.Background(), agent.Input{Text: "go", Hooks: turn.Hooks{
			SubagentFinished: func(ev turn.SubagentEvent) { mu.Lock(); finished = append(finished, ev); mu.Unlock() },
		}})
	}()
	select {
	case <-running:
	case <-time.After(10 * time.Second):
		t.Fatal("the child's tool never started")
	}
	kids := children(t, e, e.Session.ID)
	if len(kids) != 1 {
		t.Fatalf("children %d", len(kids))
	}
	// The child holds its own session's lease.
	if _, err := e.Store.AcquireLease(context.Background(), kids[0].ID, "intruder:1:x", time.Minute); err == nil {
		t.Fatal("the running child's session lease was free")
	}
	rf.arm(e.Session.ID)
	var res turn.Result
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the parent kept running without its lease")
	}
	if res.Exit != turn.ExitLeaseLost {
		t.Fatalf("parent exit %s", res.Exit)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(finished) != 1 || finished[0].Exit != turn.ExitInterrupted {
		t.Fatalf("child finished %+v, want interrupted", finished)
	}
	child, err := e.Store.GetSession(context.Background(), kids[0].ID)
	if err != nil || child.Live() || child.EndReason != string(turn.ExitInterrupted) {
		t.Fatalf("child session %+v %v", child, err)
	}
	crow := e.RowsOf(child.ID, false)
	checkTranscript(t, "child", crow)
	if got := testenv.Roles(crow); fmt.Sprint(got) != "[user assistant tool]" {
		t.Errorf("child rows %v", got)
	}
}

// TestDelegateNested: with max_depth 2 and one slot per turn, a child may
// delegate once more (its own slot bound does not block on its parent's),
// the grandchild cannot, and every level's spend rolls up to the top turn.
func TestDelegateNested(t *testing.T) {
	for _, api := range testenv.APIs {
		t.Run(api, func(t *testing.T) {
			e := testenv.New(t, testenv.Options{API: api, Model: pricedModel, Configure: func(c *agent.Config) {
				c.Subagents = agent.SubagentConfig{Enabled: true, MaxDepth: 2, MaxParallel: 1}
			}})
			e.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
				task := firstUser(r)
				hasDelegate := strings.Contains(fmt.Sprint(r.Tools), agent.DelegateToolName)
				switch {
				case task == "grand":
					if hasDelegate {
						return fakellm.Text("grandchild was offered delegate")
					}
					return fakellm.Text("grand report").WithUsage(100, 1)
				case task == "middle" && last(r).Role == "user":
					return fakellm.Calls(delegateCall("grand")).WithUsage(100, 1)
				case task == "middle":
					return fakellm.Text("middle saw: "+last(r).Text).WithUsage(100, 1)
				case last(r).Role == "user":
					return fakellm.Calls(delegateCall("middle")).WithUsage(100, 1)
				}
				return fakellm.Text("top saw: "+last(r).Text).WithUsage(100, 1)
			})
			res := e.Run("top")
			if res.Exit != turn.ExitCompleted || !strings.Contains(res.FinalText, "grand report") {
				t.Fatalf("exit %s: %q", res.Exit, res.FinalText)
			}
			if s := res.Subagents; s == nil || s.Count != 2 || s.APICalls != 3 || s.Usage.InputTokens != 300 {
				t.Fatalf("rolled up %+v, want 2 children with 3 calls", s)
			}
			spend, err := agent.SpendOf(context.Background(), e.Store, e.Session.ID)
			if err != nil || spend.Subagents.Sessions != 2 || spend.Subagents.APICalls != 3 {
				t.Fatalf("spend %+v %v", spend, err)
			}
			e.NoViolations()
		})
	}
}

// TestInterruptFansOutToChildren: Agent.Interrupt on the parent session —
// the gateway's interrupt — reaches a running child through its
// registration; both finalize as interrupted.
func TestInterruptFansOutToChildren(t *testing.T) {
	running := make(chan struct{})
	block := testenv.MustFunc(tool.Info{Name: "block", Description: "waits", Parameters: testenv.ObjectSchema(`{}`), ReadOnly: true},
		func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			close(running)
			<-ctx.Done()
			return tool.Result{Content: "stopped", IsError: true}, nil
		})
	e := newDelegEnv(t, "anthropic", block)
	e.Srv.SetDefault(func(r fakellm.Request) fakellm.Step {
		if isChild(r) {
			return fakellm.Calls(fakellm.ToolCall("block", `{}`))
		}
		return fakellm.Calls(delegateCall("wait", "block"))
	})
	done := make(chan turn.Result, 1)
	go func() { done <- e.Run("go") }()
	select {
	case <-running:
	case <-time.After(10 * time.Second):
		t.Fatal("the child's tool never started")
	}
	if !e.Agent.Interrupt(e.Session.ID) {
		t.Fatal("Interrupt found no running turn")
	}
	var res turn.Result
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Interrupt did not stop the turn")
	}
	if res.Exit != turn.ExitInterrupted || res.Subagents == nil || res.Subagents.Count != 1 {
		t.Fatalf("exit %s, subagents %+v", res.Exit, res.Subagents)
	}
	kids := children(t, e, e.Session.ID)
	if len(kids) != 1 || kids[0].EndReason != string(turn.ExitInterrupted) {
		t.Fatalf("children %+v", kids)
	}
	checkTranscript(t, "parent", e.Rows())
	checkTranscript(t, "child", e.RowsOf(kids[0].ID, false))
	if e.Agent.Interrupt(e.Session.ID) {
		t.Fatal("the finished turn stayed registered")
	}
}
