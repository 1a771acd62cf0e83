package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/bench/benchscript"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/pgtest"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/postgres"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// commitCounter counts the store's writes by method: each is one
// transaction (one commit) in both backends.
type commitCounter struct {
	store.Store
	mu sync.Mutex
	n  map[string]int
}

func (c *commitCounter) count(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[op]++
}

// reset returns the counts so far and starts again.
func (c *commitCounter) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

func (c *commitCounter) SetTitle(ctx context.Context, id, title string) error {
	c.count("SetTitle")
	return c.Store.SetTitle(ctx, id, title)
}

func (c *commitCounter) EndSession(ctx context.Context, id, reason string) error {
	c.count("EndSession")
	return c.Store.EndSession(ctx, id, reason)
}

func (c *commitCounter) AddUsage(ctx context.Context, id string, u llm.Usage, cost float64, calls int64) error {
	c.count("AddUsage")
	return c.Store.AddUsage(ctx, id, u, cost, calls)
}

func (c *commitCounter) Append(ctx context.Context, f store.Fence, msgs ...*store.Message) error {
	c.count("Append")
	return c.Store.Append(ctx, f, msgs...)
}

func (c *commitCounter) AppendSpend(ctx context.Context, f store.Fence, sp store.Spend, msgs ...*store.Message) error {
	c.count("AppendSpend")
	return c.Store.AppendSpend(ctx, f, sp, msgs...)
}

func (c *commitCounter) Replace(ctx context.Context, f store.Fence, through int64, msgs ...*store.Message) error {
	c.count("Replace")
	return c.Store.Replace(ctx, f, through, msgs...)
}

func (c *commitCounter) Delete(ctx context.Context, f store.Fence, ids ...int64) error {
	c.count("Delete")
	return c.Store.Delete(ctx, f, ids...)
}

func (c *commitCounter) AcquireLease(ctx context.Context, id, holder string, ttl time.Duration) (store.Lease, error) {
	c.count("AcquireLease")
	return c.Store.AcquireLease(ctx, id, holder, ttl)
}

func (c *commitCounter) AcquireLeaseAppend(ctx context.Context, id, holder string, ttl time.Duration, msgs ...*store.Message) (store.Lease, error) {
	c.count("AcquireLeaseAppend")
	return c.Store.AcquireLeaseAppend(ctx, id, holder, ttl, msgs...)
}

func (c *commitCounter) RefreshLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	c.count("RefreshLease")
	return c.Store.RefreshLease(ctx, l, ttl)
}

func (c *commitCounter) ReleaseLease(ctx context.Context, l store.Lease) error {
	c.count("ReleaseLease")
	return c.Store.ReleaseLease(ctx, l)
}

func (c *commitCounter) SetCooldown(ctx context.Context, cd store.Cooldown) error {
	c.count("SetCooldown")
	return c.Store.SetCooldown(ctx, cd)
}

func (c *commitCounter) AppendTurnEvents(ctx context.Context, evs ...store.TurnEvent) error {
	c.count("AppendTurnEvents")
	return c.Store.AppendTurnEvents(ctx, evs...)
}

// noopTool does nothing, so a tool turn costs only the engine's writes.
func noopTool() tool.Tool {
	return testenv.MustFunc(tool.Info{Name: "noop", Description: "Does nothing.",
		Parameters: testenv.ObjectSchema(`{"i":{"type":"integer"}}`, "i"), ReadOnly: true},
		func(_ context.Context, args json.RawMessage) (tool.Result, error) {
			return tool.Result{Content: "ok " + string(args)}, nil
		})
}

// A turn commits as few times as its invariants allow, on both backends:
// the lease is taken in the transaction that writes the user's message,
// each answer's cost is recorded in the transaction that writes the
// answer's row, each tool result is its own commit (invariant 3), and the
// release is the last. So a plain question costs 3 commits and a turn of
// ten tool rounds 23 (it was 5 and 35 with a commit each for the lease,
// the message, every answer's cost and the release). The counters still
// hold the whole turn's usage, and the rows are all there.
func TestTurnCommits(t *testing.T) {
	backends := []struct {
		name string
		open func(t *testing.T) store.Store
	}{
		{"sqlite", nil}, // testenv's own store
		{"postgres", func(t *testing.T) store.Store {
			pg, err := postgres.Open(t.Context(), pgtest.New(t), postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = pg.Close() })
			return pg
		}},
	}
	turns := []struct {
		name   string
		script func() func(fakellm.Request) fakellm.Step // a fresh one per run
		calls  int
		want   map[string]int
	}{
		{"question", emptyThen(0, "hi"), 1,
			map[string]int{"AcquireLeaseAppend": 1, "AppendSpend": 1, "ReleaseLease": 1}},
		{"ten tool rounds", func() func(fakellm.Request) fakellm.Step { return benchscript.Noop }, benchscript.Rounds + 1,
			// 10 × (the call's row with its cost + the result) + the answer.
			map[string]int{"AcquireLeaseAppend": 1, "AppendSpend": 2*benchscript.Rounds + 1, "ReleaseLease": 1}},
		// An empty answer writes no row: its cost is saved on its own
		// before the retry is sent.
		{"empty answer retried", emptyThen(1, "hi"), 2,
			map[string]int{"AcquireLeaseAppend": 1, "AddUsage": 1, "AppendSpend": 1, "ReleaseLease": 1}},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			var cc *commitCounter
			env := testenv.New(t, testenv.Options{NoBuiltins: true, ExtraTools: []tool.Tool{noopTool()},
				Configure: func(c *agent.Config) {
					if b.open != nil {
						c.Store = b.open(t)
					}
					cc = &commitCounter{Store: c.Store.(store.Store), n: map[string]int{}}
					c.Store = cc
				}})
			for _, tc := range turns {
				t.Run(tc.name, func(t *testing.T) {
					sess, err := env.Agent.NewSession(t.Context(), agent.SessionOptions{Title: tc.name})
					if err != nil {
						t.Fatal(err)
					}
					env.Srv.SetDefault(tc.script())
					cc.reset()
					res, err := env.Agent.RunTurn(t.Context(), sess.ID, agent.Input{Text: "go"})
					got := cc.reset()
					if err != nil || res.Exit != turn.ExitCompleted || res.APICalls != tc.calls {
						t.Fatalf("turn: exit %s after %d calls, %v", res.Exit, res.APICalls, err)
					}
					if fmt.Sprint(got) != fmt.Sprint(tc.want) {
						t.Errorf("writes %v, want %v", got, tc.want)
					}
					s, err := cc.GetSession(t.Context(), sess.ID)
					if err != nil {
						t.Fatal(err)
					}
					if s.APICalls != int64(res.APICalls) || s.Usage != res.Usage || s.CostUSD != res.CostUSD {
						t.Errorf("session counters %d calls %+v $%v; want the turn's %d calls %+v $%v",
							s.APICalls, s.Usage, s.CostUSD, res.APICalls, res.Usage, res.CostUSD)
					}
					rows, err := cc.Messages(t.Context(), sess.ID, store.MessageQuery{})
					if err != nil {
						t.Fatal(err)
					}
					// The user's message, then a row per AppendSpend.
					if want := 1 + tc.want["AppendSpend"]; len(rows) != want || rows[0].Role != llm.RoleUser || rows[0].Text() != "go" {
						t.Errorf("rows %v, want %d starting with the user's message", testenv.Roles(rows), want)
					}
					if _, err := cc.Store.AcquireLease(t.Context(), sess.ID, "checker:1:x", time.Minute); err != nil {
						t.Errorf("the lease was not released: %v", err)
					}
				})
			}
		})
	}
}

// emptyThen makes scripts that answer the first empties requests with
// nothing and every later one with text.
func emptyThen(empties int32, text string) func() func(fakellm.Request) fakellm.Step {
	return func() func(fakellm.Request) fakellm.Step {
		var n atomic.Int32
		return func(fakellm.Request) fakellm.Step {
			if n.Add(1) <= empties {
				return fakellm.Text("")
			}
			return fakellm.Text(text)
		}
	}
}
