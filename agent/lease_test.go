package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/llmtest"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// holdLease takes the env session's lease for another holder, as another
// process would, and returns a function that releases it.
func holdLease(t *testing.T, env *testenv.Env, holder string) (store.Lease, func()) {
	t.Helper()
	l, err := env.Store.AcquireLease(t.Context(), env.Session.ID, holder, 5*time.Minute)
	if err != nil {
		t.Fatalf("take the lease as %s: %v", holder, err)
	}
	return l, func() {
		if err := env.Store.ReleaseLease(context.Background(), l); err != nil {
			t.Errorf("release: %v", err)
		}
	}
}

// leaseFree fails the test unless another holder can take the session's
// lease right away: the turn that held it released it.
func leaseFree(t *testing.T, env *testenv.Env) {
	t.Helper()
	l, err := env.Store.AcquireLease(t.Context(), env.Session.ID, "checker:1:x", time.Minute)
	if err != nil {
		t.Fatalf("the lease was not released: %v", err)
	}
	if err := env.Store.ReleaseLease(t.Context(), l); err != nil {
		t.Fatal(err)
	}
}

// A session busy with another holder's turn: the turn waits AdmitWait, then
// returns the early result busy — after saving the message as a display-
// only unsent row, which is never sent to a model.
func TestBusySessionKeepsMessage(t *testing.T) {
	env := testenv.New(t, testenv.Options{Configure: func(c *agent.Config) { c.AdmitWait = 150 * time.Millisecond }})
	_, release := holdLease(t, env, "other-host:4242:abcdef")
	res := env.Run("are you there?")
	if res.Exit != turn.ExitBusy || res.Failure == nil || !res.Failure.Retryable {
		t.Fatalf("exit %s failure %+v; want busy, retryable", res.Exit, res.Failure)
	}
	for _, want := range []string{"busy", "other-host:4242:abcdef", "saved"} {
		if !strings.Contains(res.Explanation, want) {
			t.Errorf("explanation %q does not mention %q", res.Explanation, want)
		}
	}
	if n := len(env.Srv.Requests()); n != 0 {
		t.Fatalf("a turn that was not admitted made %d API calls", n)
	}
	rows := env.Rows()
	if len(rows) != 1 || rows[0].Kind != store.RowUnsent || rows[0].Text() != "are you there?" {
		t.Fatalf("rows %+v; want the message kept as one unsent row", rows)
	}
	release()
	for _, m := range env.ContinueOK("now?") {
		if strings.Contains(m.Text, "are you there?") {
			t.Errorf("the unsent message was sent: %+v", m)
		}
	}
}

// A turn waiting for a busy session runs as soon as the holder lets go.
func TestAdmissionWaitsForHolder(t *testing.T) {
	env := testenv.New(t, testenv.Options{Configure: func(c *agent.Config) { c.AdmitWait = 10 * time.Second }})
	_, release := holdLease(t, env, "other-host:4242:abcdef")
	const hold = 200 * time.Millisecond
	time.AfterFunc(hold, release)
	start := time.Now()
	env.ContinueOK("after you")
	if took := time.Since(start); took < hold {
		t.Errorf("the turn ran after %v, before the holder released at %v", took, hold)
	}
}

// Ctrl+C while waiting for the session: the wait ends at once, the result
// says why, and the message is kept.
func TestAdmissionInterrupted(t *testing.T) {
	env := testenv.New(t, testenv.Options{Configure: func(c *agent.Config) { c.AdmitWait = time.Minute }})
	_, release := holdLease(t, env, "other-host:4242:abcdef")
	defer release()
	ctx, cancel := context.WithCancel(t.Context())
	var at atomic.Int64
	time.AfterFunc(100*time.Millisecond, func() { at.Store(time.Now().UnixNano()); cancel() })
	res := env.RunWith(ctx, agent.Input{Text: "never mind"})
	if took := time.Since(time.Unix(0, at.Load())); at.Load() == 0 || took > time.Second {
		t.Errorf("returned %v after the cancel; want within 1s", took)
	}
	if res.Exit != turn.ExitInterrupted || !strings.Contains(res.Explanation, "saved") {
		t.Fatalf("exit %s (%s); want interrupted, message saved", res.Exit, res.Explanation)
	}
	if rows := env.Rows(); len(rows) != 1 || rows[0].Kind != store.RowUnsent {
		t.Fatalf("rows %+v; want one unsent row", rows)
	}
}

// A lease left by a process that was killed (kill -9 gives it no chance
// to release) does not block the session until it expires: a holder on
// this host whose process is gone is replaced at once. Any doubt waits.
func TestDeadHolderReplaced(t *testing.T) {
	host := agent.HostID()
	hostName, _ := os.Hostname()
	if host == "" {
		t.Skip("no host name")
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("cannot run true:", err)
	}
	cases := []struct {
		name   string
		holder string
		want   turn.Exit
	}{
		{"killed process on this host", fmt.Sprintf("%s:%d:dead00", host, dead.Process.Pid), turn.ExitCompleted},
		{"live process on this host", fmt.Sprintf("%s:%d:live00", host, os.Getppid()), turn.ExitBusy},
		{"this very process", fmt.Sprintf("%s:%d:self00", host, os.Getpid()), turn.ExitBusy},
		{"another host", fmt.Sprintf("elsewhere-%s:%d:dead00", host, dead.Process.Pid), turn.ExitBusy},
		{"same host name, another pid namespace", fmt.Sprintf("%s/1:%d:dead00", hostName, dead.Process.Pid), turn.ExitBusy},
		{"a name without a pid", "gateway-node-7", turn.ExitBusy},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := testenv.New(t, testenv.Options{Configure: func(cfg *agent.Config) { cfg.AdmitWait = 100 * time.Millisecond }})
			old, _ := holdLease(t, env, c.holder)
			env.Srv.Script(fakellm.Text("here"))
			res := env.Run("hello")
			if res.Exit != c.want {
				t.Fatalf("exit %s (%s), want %s", res.Exit, res.Explanation, c.want)
			}
			if c.want != turn.ExitCompleted {
				return
			}
			// The dead holder's token is fenced out for good.
			err := env.Store.Append(t.Context(), old.Fence(), &store.Message{Message: llm.NewText(llm.RoleUser, "zombie")})
			if store.KindOf(err) != store.KindLeaseLost {
				t.Errorf("append with the dead holder's token: %v, want lease lost", err)
			}
			leaseFree(t, env)
			env.NoViolations()
		})
	}
}

// The lease lost mid-turn: this process stopped (its refresher hangs) past
// the lease's expiry, another process took the session over and ran a
// turn. When this one wakes, its write is refused by the fence, its
// watchdog stops the turn, and nothing it does lands after the other
// turn's rows. The next turn repairs the orphan call.
func TestTakenOverTurnIsFencedOut(t *testing.T) {
	var fs *testenv.FaultStore
	started := make(chan struct{})
	wake := make(chan struct{})
	var ran atomic.Int32
	slow := testenv.MustFunc(tool.Info{Name: "slow", Description: "takes a while", Parameters: testenv.ObjectSchema(`{}`)},
		func(context.Context, json.RawMessage) (tool.Result, error) {
			ran.Add(1)
			close(started)
			<-wake // a paused process: it does not notice the cancel either
			return tool.Result{Content: "slow result"}, nil
		})
	env := testenv.New(t, testenv.Options{ExtraTools: []tool.Tool{slow}, Configure: func(c *agent.Config) {
		fs = testenv.NewFaultStore(c.Store)
		c.Store = fs
		c.LeaseTTL = 300 * time.Millisecond
		c.LeaseRefresh = 50 * time.Millisecond
	}})
	wakeUp := fs.HoldRefreshes()
	defer wakeUp()
	env.Srv.Script(
		fakellm.Calls(fakellm.ToolCall("slow", `{}`)),
		fakellm.Text("B's answer"),
	)
	resA := make(chan turn.Result, 1)
	go func() {
		res, err := env.Agent.RunTurn(context.Background(), env.Session.ID, agent.Input{Text: "A's task"})
		if err != nil {
			t.Errorf("A: %v", err)
		}
		resA <- res
	}()
	<-started

	// Process B: its own connection to the same file, its own agent.
	st2, err := sqlite.Open(t.Context(), env.DBPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	cfgB := env.Config
	cfgB.Store = st2
	cfgB.AdmitWait = 10 * time.Second
	cfgB.LeaseTTL, cfgB.LeaseRefresh = 0, 0
	agB, err := agent.New(cfgB)
	if err != nil {
		t.Fatal(err)
	}
	resB, err := agB.RunTurn(t.Context(), env.Session.ID, agent.Input{Text: "B's task"})
	if err != nil || resB.Exit != turn.ExitCompleted {
		t.Fatalf("B: exit %s (%s), err %v", resB.Exit, resB.Explanation, err)
	}

	close(wake)
	wakeUp()
	var a turn.Result
	select {
	case a = <-resA:
	case <-time.After(5 * time.Second):
		t.Fatal("A's turn did not end after losing its lease")
	}
	if a.Failure == nil || !strings.Contains(a.Failure.Reason(), "lease_lost") {
		t.Fatalf("A: exit %s failure %+v; want the lease loss named", a.Exit, a.Failure)
	}

	rows := env.Rows()
	bFirst := slices.IndexFunc(rows, func(r store.Message) bool { return r.TurnID == resB.TurnID })
	if bFirst < 0 {
		t.Fatalf("B's rows are missing: %+v", rows)
	}
	for _, r := range rows[bFirst:] {
		if r.TurnID == a.TurnID {
			t.Errorf("A wrote after B took over: %s %q", r.Role, r.Text())
		}
	}
	if got := testenv.Roles(rows); !slices.Equal(got, []string{"user", "assistant", "user", "assistant"}) {
		t.Errorf("rows %v; want A's user and call, then B's exchange", got)
	}
	if ran.Load() != 1 {
		t.Errorf("the slow tool ran %d times", ran.Load())
	}
	// A's call was paid for: its cost stays counted although A's later
	// writes were refused (it went to disk with the call's row).
	s, err := env.Store.GetSession(t.Context(), env.Session.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s.APICalls != int64(a.APICalls+resB.APICalls) {
		t.Errorf("session counts %d calls; want A's %d and B's %d", s.APICalls, a.APICalls, resB.APICalls)
	}
	msgs := env.ContinueOK("C's task")
	if len(msgs) < 3 || msgs[2].Role != "tool" || !strings.Contains(msgs[2].Text, "interrupted") {
		t.Errorf("next request %+v; want A's orphan call answered by a synthetic result", msgs)
	}
	leaseFree(t, env)
}

// The watchdog: a lease that cannot be renewed before it expires stops the
// turn (hard interrupt) instead of letting it run unfenced.
func TestRefreshFailureStopsTurn(t *testing.T) {
	var fs *testenv.FaultStore
	block := testenv.MustFunc(tool.Info{Name: "block", Description: "waits", Parameters: testenv.ObjectSchema(`{}`)},
		func(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
			<-ctx.Done()
			return tool.Result{Content: "stopped", IsError: true}, nil
		})
	env := testenv.New(t, testenv.Options{ExtraTools: []tool.Tool{block}, Configure: func(c *agent.Config) {
		fs = testenv.NewFaultStore(c.Store)
		c.Store = fs
		c.LeaseTTL = 300 * time.Millisecond
		c.LeaseRefresh = 50 * time.Millisecond
	}})
	fs.FailRefreshes(testenv.StoreError(store.KindLocked))
	env.Srv.Script(fakellm.Calls(fakellm.ToolCall("block", `{}`)))
	done := make(chan turn.Result, 1)
	go func() { done <- env.Run("wait forever") }()
	var res turn.Result
	select {
	case res = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the turn kept running without a lease")
	}
	if res.Exit != turn.ExitLeaseLost {
		t.Fatalf("exit %s (%s), want lease_lost", res.Exit, res.Explanation)
	}
	fs.FailRefreshes(nil)
	leaseFree(t, env)
	env.ContinueOK("again")
}

// Cleanup on every exit: the refresher is stopped and joined — RunTurn does
// not return while a renewal is under way, and none starts afterwards —
// and the lease is released; after a normal end, an interrupt, and a panic
// in a tool. Each case runs in a synctest bubble (the scripted model in
// process, SQLite in a temp dir): the tool's work, the held renewal and the
// quiet period afterwards are fake-clock time, exact and instant.
func TestCleanupOnEveryExit(t *testing.T) {
	cases := []struct {
		name string
		// tool is the turn's one tool call; interrupt cancels the turn.
		tool func(ctx context.Context, interrupt context.CancelFunc) (tool.Result, error)
		want turn.Exit
	}{
		{"completed", func(context.Context, context.CancelFunc) (tool.Result, error) {
			time.Sleep(60 * time.Millisecond)
			return tool.Result{Content: "ok"}, nil
		}, turn.ExitCompleted},
		{"interrupted", func(ctx context.Context, interrupt context.CancelFunc) (tool.Result, error) {
			time.AfterFunc(80*time.Millisecond, interrupt)
			<-ctx.Done()
			return tool.Result{Content: "stopped", IsError: true}, nil
		}, turn.ExitInterrupted},
		{"tool panic", func(context.Context, context.CancelFunc) (tool.Result, error) {
			time.Sleep(60 * time.Millisecond)
			panic("tool exploded")
		}, turn.ExitPanic},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, interrupt := context.WithCancel(t.Context())
				defer interrupt()
				// A raw tool, not a tool.Func: its panic must reach the engine.
				work := &rawTool{info: tool.Info{Name: "work", Description: "works", Parameters: testenv.ObjectSchema(`{}`)},
					run: func(ctx context.Context, _ json.RawMessage) (tool.Result, error) { return c.tool(ctx, interrupt) }}
				dir := t.TempDir()
				st, err := sqlite.Open(t.Context(), filepath.Join(dir, "state.db"), sqlite.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				fs := testenv.NewFaultStore(st)
				model := llmtest.New(llmtest.Calls(llmtest.ToolCall("work", `{}`)), llmtest.Text("worked"))
				ag, err := agent.New(agent.Config{
					Store:        fs,
					Workspace:    dir,
					Tools:        []tool.Tool{work},
					LeaseRefresh: 10 * time.Millisecond,
					LeaseTTL:     time.Minute,
					Config:       turn.Config{Routes: []turn.Route{{Provider: model, Model: "scripted"}}},
				})
				if err != nil {
					t.Fatal(err)
				}
				sess, err := ag.NewSession(t.Context(), agent.SessionOptions{})
				if err != nil {
					t.Fatal(err)
				}
				// A renewal hangs until well after the turn's own work is
				// over, so the facade's cleanup finds it under way and must
				// wait.
				time.AfterFunc(600*time.Millisecond, fs.HoldRefreshes())
				res, err := ag.RunTurn(ctx, sess.ID, agent.Input{Text: "work"})
				if err != nil || res.Exit != c.want {
					t.Fatalf("exit %s (%s), %v, want %s", res.Exit, res.Explanation, err, c.want)
				}
				if n := fs.RefreshesInFlight(); n != 0 {
					t.Errorf("RunTurn returned while %d lease renewals were still under way", n)
				}
				n := fs.Refreshes()
				if n == 0 {
					t.Fatal("the refresher never ran during the turn")
				}
				// Five refresh periods: a refresher that outlived its turn
				// would renew in them.
				time.Sleep(50 * time.Millisecond)
				if m := fs.Refreshes(); m != n {
					t.Errorf("%d refreshes after RunTurn returned: the refresher outlived its turn", m-n)
				}
				l, err := st.AcquireLease(t.Context(), sess.ID, "checker:1:x", time.Minute)
				if err != nil {
					t.Fatalf("the lease was not released: %v", err)
				}
				if err := st.ReleaseLease(t.Context(), l); err != nil {
					t.Fatal(err)
				}
				model.Script(llmtest.Text("Done: next"))
				if res, err := ag.RunTurn(t.Context(), sess.ID, agent.Input{Text: "next"}); err != nil || res.Exit != turn.ExitCompleted {
					t.Fatalf("next turn: exit %s, %v: %s", res.Exit, err, res.Explanation)
				}
			})
		})
	}
}

// A panic in a tool or in a phase ends the turn "panic" with the stack in
// the log; the process lives on, the call is paired, the lease is free and
// the next turn runs.
func TestPanicEndsTurnCleanly(t *testing.T) {
	cases := []struct {
		name  string
		hooks turn.Hooks
		step  fakellm.Step
	}{
		{"in a tool", turn.Hooks{}, fakellm.Calls(fakellm.ToolCall("explode", `{}`))},
		{"in a phase", turn.Hooks{TextDelta: func(string) { panic("hook exploded") }}, fakellm.Text("streamed text")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A raw tool, not a tool.Func: its panic must reach the engine.
			explode := &rawTool{info: tool.Info{Name: "explode", Description: "panics", Parameters: testenv.ObjectSchema(`{}`)},
				run: func(context.Context, json.RawMessage) (tool.Result, error) { panic("tool exploded") }}
			logs := &testenv.Buffer{}
			env := testenv.New(t, testenv.Options{ExtraTools: []tool.Tool{explode}, Configure: func(cfg *agent.Config) {
				cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
			}})
			env.Srv.Script(c.step)
			res := env.RunWith(t.Context(), agent.Input{Text: "go", Hooks: c.hooks})
			if res.Exit != turn.ExitPanic || res.Failure == nil || res.Failure.Reason() != "panic" {
				t.Fatalf("exit %s failure %+v; want panic", res.Exit, res.Failure)
			}
			if !strings.Contains(res.Explanation, "exploded") {
				t.Errorf("explanation %q does not name the panic", res.Explanation)
			}
			if l := logs.String(); !strings.Contains(l, "exploded") || !strings.Contains(l, "goroutine") {
				t.Errorf("the log lacks the panic and its stack:\n%s", l)
			}
			rows := env.Rows()
			for _, r := range rows {
				for _, call := range r.ToolCalls {
					if !slices.ContainsFunc(rows, func(m store.Message) bool { return m.ToolCallID == call.ID }) {
						t.Errorf("call %s has no result", call.ID)
					}
				}
			}
			leaseFree(t, env)
			env.ContinueOK("still alive?")
		})
	}
}

// rawTool is a tool.Tool that is not a tool.Func, which would turn a panic
// into an error result.
type rawTool struct {
	info tool.Info
	run  func(context.Context, json.RawMessage) (tool.Result, error)
}

func (r *rawTool) Info() tool.Info { return r.info }

func (r *rawTool) Run(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	return r.run(ctx, args)
}
