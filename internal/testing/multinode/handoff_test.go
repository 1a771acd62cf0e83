//go:build unix

package multinode

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/turn"
)

// TestHandoffContinuesTurn kills -9 the node running a turn at each kill
// point once — while its model call streams, inside a read-only MCP tool,
// inside write_file before and after its rename, inside a shell command,
// between two tool rounds: after the lease TTL another node continues the
// turn from its last durable point and completes it (see killTurn for
// what each must show).
func TestHandoffContinuesTurn(t *testing.T) {
	const ttl = 2 * time.Second
	m := newKillModel()
	c := killCluster(t, ttl, m, "")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 31))
	for _, kind := range killPoints {
		t.Run(kind, func(t *testing.T) {
			moved := c.killTurn(t.Context(), t, m, kind, rnd)
			t.Logf("kill -> handoff status on the stream: %v (lease TTL %v, sweep every %v)", moved.Round(time.Millisecond), ttl, sweepEvery(ttl))
		})
	}
	c.queueDrains(t)
	c.checkWire(t)
}

// sweepEvery is how often a node looks for sessions nobody runs (see
// README "Scale out"): TTL/10, at most a second.
func sweepEvery(ttl time.Duration) time.Duration { return min(ttl/10, time.Second) }

// soakIterations is how many kills TestHandoffSoak makes: 30, or 200 with
// TALARIA_SOAK=1.
func soakIterations() int {
	if os.Getenv("TALARIA_SOAK") != "" {
		return 200
	}
	return 30
}

// TestHandoffSoak kills -9 the node running a turn at a kill point drawn
// at random, again and again on one cluster whose killed nodes are
// replaced: every turn must continue and pass killTurn's checks. The seed
// is printed; TALARIA_SOAK_SEED replays one.
func TestHandoffSoak(t *testing.T) {
	const ttl = time.Second
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("TALARIA_SOAK_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	m := newKillModel()
	c := killCluster(t, ttl, m, "")
	rnd := rand.New(rand.NewPCG(seed, 31))
	n := soakIterations()
	start := time.Now()
	var total, worst time.Duration
	counts := map[string]int{}
	for i := range n {
		kind := killPoints[rnd.IntN(len(killPoints))]
		counts[kind]++
		ok := t.Run(fmt.Sprintf("%d-%s", i, kind), func(t *testing.T) {
			moved := c.killTurn(t.Context(), t, m, kind, rnd)
			total += moved
			worst = max(worst, moved)
		})
		if !ok {
			t.Fatalf("seed %d (TALARIA_SOAK_SEED=%d replays it): iteration %d (%s) failed", seed, seed, i, kind)
		}
	}
	t.Logf("seed %d: %d kills %v passed in %v; kill -> handoff status mean %v, worst %v (lease TTL %v, sweep every %v)",
		seed, n, counts, time.Since(start).Round(time.Second), (total / time.Duration(n)).Round(time.Millisecond), worst.Round(time.Millisecond), ttl, sweepEvery(ttl))
	c.queueDrains(t)
	c.checkWire(t)
}

// TestHandoffLimit: a turn whose every tool call kills its node is handed
// off handoff_max (2) times and then, at the third death, ends
// handoff_limit instead of hopping on; each call ran exactly once.
func TestHandoffLimit(t *testing.T) {
	const ttl = 2 * time.Second
	m := newKillModel()
	c := killCluster(t, ttl, m, "")
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	prompt := fmt.Sprintf("bound-%d", time.Now().UnixNano())
	sid, err := c.newSession(ctx, c.other())
	if err != nil {
		t.Fatal(err)
	}
	tid, err := c.send(ctx, c.other(), sid, prompt)
	if err != nil {
		t.Fatal(err)
	}
	count := filepath.Join(c.ws, prompt+".txt")
	var f *follower
	for death := 1; death <= 3; death++ {
		if !testenv.Eventually(60*time.Second, func() bool {
			b, _ := os.ReadFile(count)
			return strings.Count(string(b), "x") == death
		}) {
			t.Fatalf("death %d: the command did not run; rows %v", death, describe(c.rows(sid)))
		}
		victim := c.holder(t, sid)
		if f == nil || f.node == victim.i {
			f = c.follow(ctx, c.other(victim), sid, 1)
			f.opened(t)
		}
		c.replace(t, victim)
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		t.Fatalf("the turn did not end; rows %v", describe(c.rows(sid)))
	}
	res, _ := f.result(tid)
	if res.Exit != turn.ExitHandoffLimit || !strings.Contains(res.Explanation, "handoff_max") {
		t.Fatalf("result %s: %s; want handoff_limit", res.Exit, res.Explanation)
	}
	time.Sleep(ttl) // no node may run it again
	if b, _ := os.ReadFile(count); strings.Count(string(b), "x") != 3 {
		t.Fatalf("the command ran %d times; want 3 (once per node, never re-run)", strings.Count(string(b), "x"))
	}
	evs, err := c.reader.TurnEvents(ctx, sid, tid)
	if err != nil {
		t.Fatal(err)
	}
	handoffs := 0
	for _, e := range evs {
		if e.Kind == "handoff" {
			handoffs++
			var h turn.Handoff
			if err := json.Unmarshal([]byte(e.Detail), &h); err != nil || h.Max != 2 {
				t.Errorf("handoff event %q: %v", e.Detail, err)
			}
		}
	}
	if handoffs != 2 {
		t.Fatalf("%d handoffs recorded; want 2", handoffs)
	}
	c.queueDrains(t)
	c.checkWire(t)
}
