package agent_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/agent"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
	"github.com/talaria-agent/talaria/turn"
)

// rebuildSink collects the PromptRebuilt updates of the turns it hooks.
type rebuildSink struct {
	mu  sync.Mutex
	got []turn.PromptRebuilt
}

func (r *rebuildSink) hooks() turn.Hooks {
	return turn.Hooks{Sink: func(u turn.Update) {
		if p, ok := u.(turn.PromptRebuilt); ok {
			r.mu.Lock()
			r.got = append(r.got, p)
			r.mu.Unlock()
		}
	}}
}

func (r *rebuildSink) all() []turn.PromptRebuilt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func countRebuildRows(rows []store.Message) int {
	n := 0
	for _, r := range rows {
		if r.Kind == store.RowPromptRebuilt {
			n++
		}
	}
	return n
}

func memoryEnv(t *testing.T) *testenv.Env {
	return testenv.New(t, testenv.Options{Configure: func(c *agent.Config) {
		c.Memory.Enabled = true
		c.AdmitWait = time.Minute
	}})
}

func runOn(t *testing.T, ag *agent.Agent, id, text string, hooks turn.Hooks) {
	t.Helper()
	res, err := ag.RunTurn(context.Background(), id, agent.Input{Text: text, Hooks: hooks})
	if err != nil || res.Exit != turn.ExitCompleted {
		t.Fatalf("turn %q: exit %s (%s), %v", text, res.Exit, res.Explanation, err)
	}
}

// Memory the model adds through the memory tool reaches the session's
// prompt at the next turn, with one rebuild (never inside the turn that
// added it: its calls keep their prefix); memory added outside a turn
// (`talaria memory add`, Agent.AddMemory) is one more rebuild; turns with
// no change rebuild nothing.
func TestMemoryChangeRebuildsPromptOnce(t *testing.T) {
	env := memoryEnv(t)
	seen := &rebuildSink{}
	id := env.Session.ID
	env.Srv.Script(
		fakellm.Calls(fakellm.ToolCall("memory", `{"action":"add","text":"The user prefers tabs."}`)),
		fakellm.Text("noted"),
		fakellm.Text("two"),
		fakellm.Text("three"),
		fakellm.Text("four"),
		fakellm.Text("five"),
	)
	runOn(t, env.Agent, id, "remember that I prefer tabs", seen.hooks())
	if n := len(seen.all()); n != 0 {
		t.Fatalf("%d rebuilds in the turn that added the memory", n)
	}
	runOn(t, env.Agent, id, "two", seen.hooks())
	got := seen.all()
	if len(got) != 1 || !got[0].Memory || len(got[0].ToolsAdded)+len(got[0].ToolsRemoved) != 0 {
		t.Fatalf("after the memory tool: %+v; want one memory rebuild", got)
	}
	runOn(t, env.Agent, id, "three", seen.hooks())
	if _, err := env.Agent.AddMemory(context.Background(), "The project uses Go 1.25.", ""); err != nil {
		t.Fatal(err)
	}
	runOn(t, env.Agent, id, "four", seen.hooks())
	runOn(t, env.Agent, id, "five", seen.hooks())

	if got := seen.all(); len(got) != 2 || !got[1].Memory {
		t.Fatalf("rebuilds %+v; want two (the memory tool, then AddMemory)", got)
	}
	if n := countRebuildRows(env.Rows()); n != 2 {
		t.Errorf("%d rebuild rows in the transcript, want 2", n)
	}
	reqs := env.Srv.Requests()
	if len(reqs) != 6 {
		t.Fatalf("%d requests", len(reqs))
	}
	sys := func(i int) string { return reqs[i].System }
	switch {
	case sys(0) != sys(1):
		t.Error("the prompt changed inside the turn that added the memory")
	case strings.Contains(sys(1), "prefers tabs"):
		t.Error("the memory reached the prompt inside the turn that added it")
	case !strings.Contains(sys(2), "prefers tabs") || sys(2) != sys(3):
		t.Error("turn two: the memory is missing, or turn three's prompt differs")
	case !strings.Contains(sys(4), "Go 1.25") || sys(4) != sys(5):
		t.Error("turn four: the added memory is missing, or turn five's prompt differs")
	}
	// Memory is the only change: everything before the memory block is
	// the creation-time prompt, date included.
	if !strings.HasPrefix(sys(4), strings.TrimRight(env.Session.SystemPrompt, "\n")) {
		t.Errorf("rebuilt prompt does not extend the original:\n%s\n---\n%s", env.Session.SystemPrompt, sys(4))
	}
	env.NoViolations()
}

// Two processes (two stores on one database) with the same change run
// turns on one session at once: the lease serializes them, and the change
// is rebuilt once, by whichever ran first.
func TestSameChangeTwoProcessesRebuildOnce(t *testing.T) {
	env := memoryEnv(t)
	id := env.Session.ID
	env.Srv.SetDefault(func(fakellm.Request) fakellm.Step { return fakellm.Text("ok") })
	runOn(t, env.Agent, id, "first", turn.Hooks{})

	st2, err := sqlite.Open(t.Context(), env.DBPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	cfg := env.Config
	cfg.Store = st2
	other, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	if _, err := env.Agent.AddMemory(context.Background(), "Deploys go through staging first.", ""); err != nil {
		t.Fatal(err)
	}
	seen := &rebuildSink{}
	var wg sync.WaitGroup
	for i, ag := range []*agent.Agent{env.Agent, other} {
		wg.Go(func() {
			res, err := ag.RunTurn(context.Background(), id, agent.Input{Text: "go " + string(rune('a'+i)), Hooks: seen.hooks()})
			if err != nil || res.Exit != turn.ExitCompleted {
				t.Errorf("process %d: exit %s (%s), %v", i, res.Exit, res.Explanation, err)
			}
		})
	}
	wg.Wait()
	if got := seen.all(); len(got) != 1 || !got[0].Memory {
		t.Fatalf("rebuilds %+v; want exactly one", got)
	}
	if n := countRebuildRows(env.Rows()); n != 1 {
		t.Fatalf("%d rebuild rows, want 1", n)
	}
	reqs := env.Srv.Requests()
	if len(reqs) != 3 || reqs[1].System != reqs[2].System || !strings.Contains(reqs[2].System, "staging first") {
		t.Fatal("the two turns after the change did not send the same rebuilt prompt")
	}
}

// staleStore hands out a stale copy of a session for its next reads
// reads (the turn's lookup and its read under the lease), as a node whose
// reads raced another node's rebuild would have.
type staleStore struct {
	store.Store
	mu    sync.Mutex
	stale *store.Session
	reads int
}

func (s *staleStore) GetSession(ctx context.Context, id string) (*store.Session, error) {
	s.mu.Lock()
	stale := s.stale
	if s.reads--; s.reads <= 0 {
		s.stale = nil
	}
	s.mu.Unlock()
	if stale != nil && stale.ID == id {
		c := *stale
		return &c, nil
	}
	return s.Store.GetSession(ctx, id)
}

// A turn that read the session before another process rebuilt its prompt
// for the same change loses the stamp compare-and-set: it sends the prompt
// the other stored and says nothing, and the transcript has one rebuild.
func TestStaleReadLosesStampCompareAndSet(t *testing.T) {
	env := memoryEnv(t)
	id := env.Session.ID
	env.Srv.SetDefault(func(fakellm.Request) fakellm.Step { return fakellm.Text("ok") })
	before, err := env.Store.GetSession(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Agent.AddMemory(context.Background(), "Tests run with -race.", ""); err != nil {
		t.Fatal(err)
	}
	seen := &rebuildSink{}
	runOn(t, env.Agent, id, "first", seen.hooks()) // rebuilds

	stale := &staleStore{Store: env.Store, stale: before, reads: 2}
	cfg := env.Config
	cfg.Store = stale
	other, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	runOn(t, other, id, "second", seen.hooks())
	if stale.stale != nil {
		t.Fatal("the stale copy was never read")
	}
	if got := seen.all(); len(got) != 1 {
		t.Fatalf("rebuilds %+v; want one", got)
	}
	if n := countRebuildRows(env.Rows()); n != 1 {
		t.Fatalf("%d rebuild rows, want 1", n)
	}
	reqs := env.Srv.Requests()
	if len(reqs) != 2 || reqs[0].System != reqs[1].System || !strings.Contains(reqs[1].System, "-race") {
		t.Fatal("the stale turn did not send the stored, rebuilt prompt")
	}
}

// BenchmarkCurrentPrompt is what checking the prompt stamp adds to every
// turn: one memory read and hashing the offered tools (the built-ins and
// the agent's own, memory holding 20 entries).
func BenchmarkCurrentPrompt(b *testing.B) {
	env := testenv.New(b, testenv.Options{Configure: func(c *agent.Config) {
		c.Memory.Enabled = true
		c.Subagents.Enabled = true
	}})
	for i := range 20 {
		if _, err := env.Agent.AddMemory(context.Background(), strings.Repeat("a lasting fact ", 5)+string(rune('a'+i)), ""); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	for b.Loop() {
		if agent.CurrentPrompt(env.Agent, ctx, env.Session) == nil {
			b.Fatal("no prompt")
		}
	}
}
