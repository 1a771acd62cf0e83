//go:build unix

package multinode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/gateway"
	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/turn"
)

// tokenFor makes a token acting as principal.
func (c *cluster) tokenFor(t *testing.T, principal string) string {
	t.Helper()
	secret, _, err := gateway.CreateToken(context.Background(), c.reader, principal, principal, "")
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// refused fails the test unless err is a 403 or 404 answer.
func refused(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), ": 404 ") && !strings.Contains(err.Error(), ": 403 ") {
		t.Errorf("%s: %v; want 404 or 403", what, err)
	}
}

// Principal bob's token holder can neither cause, observe nor steal
// alice's handoff. Before and after the node running both their turns is
// killed, bob cannot subscribe to, post into or interrupt alice's session
// on any node; the node taking both sessions over honours each
// principal's own handoff setting (alice: interrupt, bob: the server's
// continue); bob's stream shows none of alice's events.
func TestHandoffHostile(t *testing.T) {
	const ttl = 2 * time.Second
	m := newKillModel()
	c := killCluster(t, ttl, m, "serve:\n  limits:\n    principals:\n      alice: {handoff: interrupt}\n")
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	alice, bob := c.tokenFor(t, "alice"), c.tokenFor(t, "bob")
	newSession := func(tok string, nd *node) string {
		var out struct {
			ID string `json:"id"`
		}
		if err := c.callAs(ctx, tok, nd, "POST", "v1/sessions", map[string]any{}, &out); err != nil {
			t.Fatal(err)
		}
		return out.ID
	}
	send := func(tok string, nd *node, sid, text string) string {
		var out struct {
			TurnID string `json:"turn_id"`
		}
		if err := c.callAs(ctx, tok, nd, "POST", "v1/sessions/"+sid+"/messages", map[string]any{"text": text}, &out); err != nil {
			t.Fatal(err)
		}
		return out.TurnID
	}
	at := c.nodes[0]
	aSid, bSid := newSession(alice, at), newSession(bob, at)
	aPrompt, bPrompt := fmt.Sprintf("effect-alice%d", time.Now().UnixNano()), fmt.Sprintf("effect-bob%d", time.Now().UnixNano())
	aTid := send(alice, at, aSid, aPrompt)
	bTid := send(bob, at, bSid, bPrompt)
	probe := func(when string) {
		t.Helper()
		for _, nd := range c.live() {
			refused(t, fmt.Sprintf("%s: bob subscribing to alice's session on node %d", when, nd.i),
				c.subscribeAs(ctx, bob, nd, aSid, 0, nil, func(sseEvent) bool { return false }))
			refused(t, fmt.Sprintf("%s: bob posting into alice's session on node %d", when, nd.i),
				c.callAs(ctx, bob, nd, "POST", "v1/sessions/"+aSid+"/messages", map[string]any{"text": "stolen"}, nil))
			refused(t, fmt.Sprintf("%s: bob interrupting alice's turn on node %d", when, nd.i),
				c.callAs(ctx, bob, nd, "POST", "v1/turns/"+aTid+"/interrupt", map[string]any{}, nil))
		}
	}
	probe("before the kill")
	counted := func(prompt string) bool {
		b, _ := os.ReadFile(filepath.Join(c.ws, prompt+".txt"))
		return len(b) > 0
	}
	if !testenv.Eventually(time.Minute, func() bool { return counted(aPrompt) && counted(bPrompt) }) {
		t.Fatalf("the turns did not reach their commands; rows %v %v", describe(c.rows(aSid)), describe(c.rows(bSid)))
	}
	victims := []*node{c.holder(t, aSid)}
	if v := c.holder(t, bSid); v != victims[0] {
		victims = append(victims, v) // the sweep may have given it to another node
	}
	fa := c.followAs(ctx, alice, c.other(victims...), aSid, 1)
	fb := c.followAs(ctx, bob, c.other(victims...), bSid, 1)
	fa.opened(t)
	fb.opened(t)
	for _, v := range victims {
		c.replace(t, v)
	}
	for _, f := range []*follower{fa, fb} {
		select {
		case <-f.done:
		case <-ctx.Done():
			t.Fatalf("a turn did not end after the kill; rows %v %v", describe(c.rows(aSid)), describe(c.rows(bSid)))
		}
	}
	probe("after the takeover")
	if res, _ := fa.result(aTid); res.Exit != turn.ExitInterrupted {
		t.Errorf("alice's turn ended %s %q; want interrupted (her handoff: interrupt)", res.Exit, res.FinalText)
	}
	checkContinuous(t, fa, aTid, 0)
	if res, _ := fb.result(bTid); res.Exit != turn.ExitCompleted || res.FinalText != "answer: "+bPrompt {
		t.Errorf("bob's turn ended %s %q; want completed after a handoff (the server's continue)", res.Exit, res.FinalText)
	}
	checkContinuous(t, fb, bTid, 1)
	fb.mu.Lock()
	for _, ev := range fb.events {
		if ev.TurnID == aTid || strings.Contains(string(ev.Data), aPrompt) || strings.Contains(string(ev.Data), aSid) {
			t.Errorf("bob's stream carries alice's %s event %d: %s", ev.Type, ev.ID, ev.Data)
		}
	}
	fb.mu.Unlock()
	for _, p := range []string{aPrompt, bPrompt} {
		if b, _ := os.ReadFile(filepath.Join(c.ws, p+".txt")); string(b) != "x\n" {
			t.Errorf("%s's command ran %d times; want once", p, strings.Count(string(b), "x"))
		}
	}
	evs, err := c.reader.TurnEvents(ctx, aSid, aTid)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Kind == "handoff" {
			t.Errorf("alice's turn was handed off (%s) despite her handoff: interrupt", e.Detail)
		}
	}
	c.queueDrains(t)
	c.checkWire(t)
}

// A turn that kills every node it runs on hops to its bound (handoff_max
// 2, then handoff_limit) without starving anyone: another principal's
// turns, sent one after another the whole time, all complete — those on a
// node that died are continued elsewhere.
func TestHandoffNoStarvation(t *testing.T) {
	const ttl = 2 * time.Second
	m := newKillModel()
	c := killCluster(t, ttl, m, "")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	carol, bob := c.tokenFor(t, "carol"), c.tokenFor(t, "bob")
	var cs struct {
		ID string `json:"id"`
	}
	if err := c.callAs(ctx, carol, c.nodes[0], "POST", "v1/sessions", map[string]any{}, &cs); err != nil {
		t.Fatal(err)
	}
	prompt := fmt.Sprintf("bound-%d", time.Now().UnixNano())
	var ct struct {
		TurnID string `json:"turn_id"`
	}
	if err := c.callAs(ctx, carol, c.nodes[0], "POST", "v1/sessions/"+cs.ID+"/messages", map[string]any{"text": prompt}, &ct); err != nil {
		t.Fatal(err)
	}

	// Bob's turns, one after another until carol's has ended, each on a
	// node that is alive when it is sent.
	stop := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	hops := 0
	liveNode := func(k int) *node {
		mu.Lock()
		defer mu.Unlock()
		l := c.live()
		return l[k%len(l)]
	}
	type bobTurn struct {
		prompt string
		res    turn.Result
		err    error
	}
	var bobs []bobTurn
	// dies reports whether nd is being killed (its connections broke first).
	dies := func(nd *node) bool {
		select {
		case <-nd.done:
			return true
		case <-time.After(5 * time.Second):
			return false
		}
	}
	bobDone := make(chan struct{})
	halt := func() {
		once.Do(func() { close(stop) })
		<-bobDone
	}
	defer halt()
	go func() {
		defer close(bobDone)
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			bt := bobTurn{prompt: fmt.Sprintf("plain-bob%d", k)}
			var s struct {
				ID string `json:"id"`
			}
			var tr struct {
				TurnID string `json:"turn_id"`
			}
			// A request to a node killed under it is the client's loss,
			// not the server's: such a turn is left out (a send whose
			// answer was lost may or may not have queued).
			nd := liveNode(k)
			bt.err = c.callAs(ctx, bob, nd, "POST", "v1/sessions", map[string]any{}, &s)
			if bt.err == nil {
				bt.err = c.callAs(ctx, bob, nd, "POST", "v1/sessions/"+s.ID+"/messages", map[string]any{"text": bt.prompt}, &tr)
			}
			if bt.err != nil && dies(nd) {
				continue
			}
			// Followed on a live node, again on another when that one is
			// killed under the stream (a client reconnecting).
			for j := 1; bt.err == nil; j++ {
				fn := liveNode(k + j)
				f := c.followAs(ctx, bob, fn, s.ID, 1)
				<-f.done
				var ok bool
				if bt.res, ok = f.result(tr.TurnID); ok {
					break
				}
				if !dies(fn) || ctx.Err() != nil {
					bt.err = fmt.Errorf("the stream ended without the turn's end: %v", f.err)
				}
			}
			mu.Lock()
			bobs = append(bobs, bt)
			mu.Unlock()
		}
	}()

	count := filepath.Join(c.ws, prompt+".txt")
	var f *follower
	for death := 1; death <= 3; death++ {
		if !testenv.Eventually(time.Minute, func() bool {
			b, _ := os.ReadFile(count)
			return strings.Count(string(b), "x") == death
		}) {
			t.Fatalf("death %d: the command did not run; rows %v", death, describe(c.rows(cs.ID)))
		}
		// Bob's sends read the node list meanwhile: it changes under mu,
		// held only briefly so his turns are not held up by it.
		mu.Lock()
		victim := c.holder(t, cs.ID)
		if f == nil || f.node == victim.i {
			f = c.followAs(ctx, carol, c.other(victim), cs.ID, 1)
		}
		i := len(c.nodes)
		mu.Unlock()
		f.opened(t)
		victim.kill(t)
		nd := c.start(talariaBin(t), i)
		mu.Lock()
		c.nodes = append(c.nodes, nd)
		hops++
		mu.Unlock()
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		t.Fatalf("carol's turn did not end; rows %v", describe(c.rows(cs.ID)))
	}
	if res, _ := f.result(ct.TurnID); res.Exit != turn.ExitHandoffLimit {
		t.Errorf("carol's turn ended %s: %s; want handoff_limit", res.Exit, res.Explanation)
	}
	mu.Lock()
	during := len(bobs)
	mu.Unlock()
	halt()
	if during < 3 {
		t.Errorf("%d of bob's turns finished while carol's hopped %d times; want them to go on (at least 3)", during, hops)
	}
	for _, bt := range bobs {
		if bt.err != nil || bt.res.Exit != turn.ExitCompleted || bt.res.FinalText != "answer: "+bt.prompt {
			t.Errorf("bob's turn %s: %v, ended %s %q; want completed", bt.prompt, bt.err, bt.res.Exit, bt.res.FinalText)
		}
	}
	t.Logf("%d of bob's turns completed while carol's turn hopped to its bound", len(bobs))
	c.queueDrains(t)
	c.checkWire(t)
}
