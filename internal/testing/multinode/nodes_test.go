//go:build unix

package multinode

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/turn"
)

// sessionCount is how many sessions TestManyNodes runs: 30, or 200 with
// TALARIA_SOAK=1 (the figure; minutes on a small machine).
func sessionCount() int {
	if os.Getenv("TALARIA_SOAK") != "" {
		return 200
	}
	return 30
}

// follower is one SSE subscriber of a session, on one node.
type follower struct {
	node   int
	mu     sync.Mutex
	events []sseEvent
	// handoffAt is when the first handoff status arrived.
	handoffAt time.Time
	finished  map[string]turn.Result
	done      chan struct{} // closed after want turns finished
	open      chan struct{} // closed once the stream is open
	err       error
}

// opened waits until the stream is open (or has failed).
func (f *follower) opened(t *testing.T) {
	t.Helper()
	select {
	case <-f.open:
	case <-f.done:
		t.Fatalf("the subscriber on node %d failed: %v", f.node, f.err)
	}
}

func (f *follower) result(turnID string) (turn.Result, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.finished[turnID]
	return r, ok
}

// follow subscribes to sid on node nd from the start and records events
// until want turns have finished.
func (c *cluster) follow(ctx context.Context, nd *node, sid string, want int) *follower {
	return c.followAs(ctx, c.token, nd, sid, want)
}

// followAs is follow with the token tok.
func (c *cluster) followAs(ctx context.Context, tok string, nd *node, sid string, want int) *follower {
	f := &follower{node: nd.i, finished: map[string]turn.Result{}, done: make(chan struct{}), open: make(chan struct{})}
	go func() {
		defer close(f.done)
		f.err = c.subscribeAs(ctx, tok, nd, sid, 0, func() { close(f.open) }, func(ev sseEvent) bool {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.events = append(f.events, ev)
			if f.handoffAt.IsZero() && isHandoff(ev) {
				f.handoffAt = time.Now()
			}
			if ev.Type == "turn_finished" {
				var d struct {
					Result turn.Result `json:"result"`
				}
				_ = json.Unmarshal(ev.Data, &d)
				f.finished[ev.TurnID] = d.Result
			}
			return len(f.finished) < want
		})
	}()
	return f
}

// Three serve nodes on one database; sessions get three turns each, sent
// to random nodes — most one after another, some all at once to three
// different nodes. Every session ends with its three turns whole and one
// after another (none interleaved, lost or doubled), every request the
// model saw was well formed, every SSE subscriber (each on a random node,
// usually not the one running the turn) saw every event of every turn in
// order, and a stream resumed with Last-Event-ID on another node gets
// exactly the rest.
func TestManyNodes(t *testing.T) {
	c := newCluster(t, 3, 3*time.Second, toolThenAnswer(5*time.Millisecond))
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	n := sessionCount()
	const turns = 3
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d sessions", seed, n)
	rnd := rand.New(rand.NewPCG(seed, 13))
	pick := func() *node { return c.nodes[rnd.IntN(len(c.nodes))] }

	type session struct {
		id      string
		racing  bool
		f       *follower
		turnIDs []string
		prompts map[string]string // turn id -> prompt
	}
	sessions := make([]*session, n)
	for i := range sessions {
		id, err := c.newSession(ctx, pick())
		if err != nil {
			t.Fatal(err)
		}
		s := &session{id: id, racing: i%5 == 0, prompts: map[string]string{}}
		s.f = c.follow(ctx, pick(), id, turns)
		sessions[i] = s
	}
	starts := make([][]int, n) // the node each message goes to, drawn up front
	for i := range starts {
		for range turns {
			starts[i] = append(starts[i], rnd.IntN(len(c.nodes)))
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := make(chan error, n*turns)
	for i, s := range sessions {
		wg.Go(func() {
			send := func(j int) string {
				prompt := fmt.Sprintf("p-%d-%d", i, j)
				nd := c.nodes[starts[i][j]]
				if s.racing {
					nd = c.nodes[(i+j)%len(c.nodes)] // three nodes at once
				}
				id, err := c.send(ctx, nd, s.id, prompt)
				if err != nil {
					errs <- err
					return ""
				}
				mu.Lock()
				s.turnIDs = append(s.turnIDs, id)
				s.prompts[id] = prompt
				mu.Unlock()
				return id
			}
			if s.racing {
				var race sync.WaitGroup
				for j := range turns {
					race.Go(func() { send(j) })
				}
				race.Wait()
				return
			}
			for j := range turns {
				id := send(j)
				if id == "" {
					return
				}
				for { // the next message is sent once this turn has finished
					if _, ok := s.f.result(id); ok {
						break
					}
					select {
					case <-ctx.Done():
						errs <- fmt.Errorf("session %s: turn %s did not finish", s.id, id)
						return
					case <-s.f.done:
						if _, ok := s.f.result(id); !ok {
							errs <- fmt.Errorf("session %s: the stream ended before turn %s finished: %v", s.id, id, s.f.err)
							return
						}
					case <-time.After(5 * time.Millisecond):
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	for _, s := range sessions {
		select {
		case <-s.f.done:
		case <-ctx.Done():
			t.Fatalf("session %s: the subscriber on node %d saw %d of %d turns finish", s.id, s.f.node, len(s.f.finished), turns)
		}
	}

	for _, s := range sessions {
		rows := c.rows(s.id)
		checkTranscript(t, s.id, rows, s.turnIDs, s.prompts)
		checkStream(t, s.id, s.f, rows, s.prompts)
	}
	c.queueDrains(t)
	c.checkWire(t)
	if holders := c.distinctHolders(t); holders < 2 {
		t.Errorf("turns ran on %d node(s); want them spread over several", holders)
	}

	// Resume on another node from the middle of a recorded stream: the
	// rest comes back exactly, the live events included.
	for _, s := range sessions[:min(3, len(sessions))] {
		rec := s.f.events
		mid := rec[len(rec)/2]
		other := c.nodes[(s.f.node+1)%len(c.nodes)]
		var got []sseEvent
		rctx, rcancel := context.WithTimeout(ctx, time.Minute)
		err := c.subscribe(rctx, other, s.id, mid.ID, func(ev sseEvent) bool {
			got = append(got, ev)
			return ev.ID < rec[len(rec)-1].ID
		})
		rcancel()
		want := rec[len(rec)/2+1:]
		if err != nil || !sameEvents(got, want) {
			t.Errorf("session %s: resuming after %d on node %d: %d events (%v), want the %d recorded after it", s.id, mid.ID, other.i, len(got), err, len(want))
		}
	}
}

func sameEvents(a, b []sseEvent) bool {
	return slices.EqualFunc(a, b, func(x, y sseEvent) bool {
		return x.ID == y.ID && x.Type == y.Type && string(x.Data) == string(y.Data)
	})
}

// checkTranscript checks a session's stored rows: whole turns one after
// another (user prompt, tool call, tool result, the answer to that
// prompt), each sent turn exactly once, nothing else.
func checkTranscript(t *testing.T, sid string, rows []store.Message, turnIDs []string, prompts map[string]string) {
	t.Helper()
	if len(rows) != 4*len(turnIDs) {
		t.Errorf("session %s: %d rows, want %d (4 per turn): %v", sid, len(rows), 4*len(turnIDs), describe(rows))
		return
	}
	seen := map[string]bool{}
	for k := 0; k < len(rows); k += 4 {
		block := rows[k : k+4]
		id := block[0].TurnID
		prompt, ok := prompts[id]
		if !ok || seen[id] {
			t.Errorf("session %s: rows %d-%d belong to turn %q (sent: %v, already seen: %v)", sid, k, k+3, id, ok, seen[id])
			return
		}
		seen[id] = true
		for _, r := range block {
			if r.TurnID != id {
				t.Errorf("session %s: turn %s interleaved with %s: %v", sid, id, r.TurnID, describe(rows))
				return
			}
		}
		if block[0].Role != llm.RoleUser || block[0].Text() != prompt ||
			block[1].Role != llm.RoleAssistant || len(block[1].ToolCalls) != 1 ||
			block[2].Role != llm.RoleTool || block[2].ToolCallID != block[1].ToolCalls[0].ID ||
			block[3].Role != llm.RoleAssistant || block[3].Text() != "answer: "+prompt {
			t.Errorf("session %s: turn %s is not user, call, result, answer to %q: %v", sid, id, prompt, describe(block))
		}
	}
	for k := 1; k < len(rows); k++ {
		if rows[k].Seq <= rows[k-1].Seq {
			t.Errorf("session %s: seq %d after %d", sid, rows[k].Seq, rows[k-1].Seq)
		}
	}
}

func describe(rows []store.Message) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%d:%s/%s/%q", r.Seq, r.TurnID, r.Role, r.Text())
	}
	return out
}

// checkStream checks what one subscriber saw: ids only grow; each turn's
// events lie between its turn_started and turn_finished with no other
// turn's inside; every stored row came as a message event with id seq<<24;
// every turn completed with the answer to its own prompt.
func checkStream(t *testing.T, sid string, f *follower, rows []store.Message, prompts map[string]string) {
	t.Helper()
	var last int64
	current := ""
	started := map[string]bool{}
	msgs := map[int64]bool{}
	for _, ev := range f.events {
		if ev.ID <= last {
			t.Errorf("session %s (node %d): event id %d after %d", sid, f.node, ev.ID, last)
			return
		}
		last = ev.ID
		switch ev.Type {
		case "turn_queued":
			continue
		case "turn_started":
			if current != "" {
				t.Errorf("session %s (node %d): turn %s started inside turn %s", sid, f.node, ev.TurnID, current)
				return
			}
			current = ev.TurnID
			started[current] = true
		case "turn_finished":
			if ev.TurnID != current {
				t.Errorf("session %s (node %d): turn %s finished inside turn %q", sid, f.node, ev.TurnID, current)
				return
			}
			current = ""
		default:
			if ev.TurnID != "" && ev.TurnID != current {
				t.Errorf("session %s (node %d): %s event of turn %s inside turn %q", sid, f.node, ev.Type, ev.TurnID, current)
				return
			}
			if ev.Type == "message" {
				if ev.ID&(1<<24-1) != 0 {
					t.Errorf("session %s: message event id %d is not a row's (seq<<24)", sid, ev.ID)
				}
				msgs[ev.ID>>24] = true
			}
		}
	}
	for _, r := range rows {
		if !msgs[r.Seq] {
			t.Errorf("session %s (node %d): row seq %d never came as an event", sid, f.node, r.Seq)
		}
	}
	if len(msgs) != len(rows) {
		t.Errorf("session %s (node %d): %d message events for %d rows", sid, f.node, len(msgs), len(rows))
	}
	for id, prompt := range prompts {
		res, ok := f.result(id)
		if !ok || !started[id] || res.Exit != turn.ExitCompleted || res.FinalText != "answer: "+prompt {
			t.Errorf("session %s (node %d): turn %s: started %v, finished %v: %s %q", sid, f.node, id, started[id], ok, res.Exit, res.FinalText)
		}
	}
}

// distinctHolders counts the nodes that hold or held a session lease last.
func (c *cluster) distinctHolders(t *testing.T) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), c.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(DISTINCT holder) FROM leases`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
