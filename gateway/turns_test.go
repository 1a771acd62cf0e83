package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/internal/fakellm"
	"github.com/talaria-agent/talaria/internal/testing/telemetrytest"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// toolTurn scripts a 3-round turn: two tool rounds then a streamed answer.
func toolTurn(srv *fakellm.Server, chunkDelay time.Duration) {
	srv.Script(
		fakellm.TextCalls("Looking.", fakellm.ToolCall("list_dir", `{"path":"."}`)),
		fakellm.Calls(fakellm.ToolCall("list_dir", `{"path":"."}`)),
		fakellm.Text("The workspace is empty, and that is the whole answer streamed in pieces.").WithChunkDelay(chunkDelay),
	)
}

// TestTurnOverHTTP: a posted message runs a real turn; the events stream
// shows it start, stream, call tools and finish, and POST with
// Accept: text/event-stream streams the same turn and closes.
func TestTurnOverHTTP(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	sid := h.session(h.token)
	s := h.open(h.token, sid, 0)
	toolTurn(h.env.Srv, 0)
	tid := h.send(h.token, sid, "what is here?")
	evs := s.until(t, 10*time.Second, finished(tid))
	got := types(evs)
	if !strings.HasPrefix(got, "turn_queued turn_started message") || strings.Count(got, "tool_started tool_finished") != 2 {
		t.Fatalf("events = %s", got)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].ID <= evs[i-1].ID {
			t.Fatalf("ids not increasing at %d: %d after %d", i, evs[i].ID, evs[i-1].ID)
		}
	}
	res := resultOf(t, evs[len(evs)-1])
	if res["exit"] != "completed" || !strings.Contains(res["final_text"].(string), "whole answer") || res["tool_calls"] != float64(2) {
		t.Fatalf("result = %v", res)
	}
	var deltas strings.Builder
	for _, e := range evs {
		if e.Type == "text_delta" {
			deltas.WriteString(e.Data["text"].(string))
		}
	}
	if !strings.Contains(deltas.String(), "whole answer streamed") {
		t.Fatalf("deltas = %q", deltas.String())
	}

	// Streamed POST.
	req, _ := http.NewRequest("POST", h.srv.URL+"/v1/sessions/"+sid+"/messages", strings.NewReader(`{"text":"again"}`))
	req.Header.Set("Authorization", "Bearer "+h.token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("streamed post = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var streamed []sseEvent
	readSSE(resp.Body, func(e sseEvent) { streamed = append(streamed, e) }) // returns when the server closes
	if len(streamed) == 0 || streamed[len(streamed)-1].Type != "turn_finished" {
		t.Fatalf("streamed post events = %s", types(streamed))
	}
	for _, e := range streamed {
		if e.turn() != resp.Header.Get("X-Turn-ID") {
			t.Fatalf("streamed post carried another turn's event: %s", e.Raw)
		}
	}
	if r := resultOf(t, streamed[len(streamed)-1]); r["final_text"] != "echo: again" {
		t.Fatalf("streamed result = %v", r)
	}
	h.env.NoViolations()
}

// TestSSEResume: a client that drops mid-turn and reconnects with
// Last-Event-ID gets exactly the events it missed, compared with a client
// that stayed connected. Also after the ring forgot them (rebuilt from
// rows) and after a restart of the gateway.
func TestSSEResume(t *testing.T) {
	for _, ring := range []int{4096, 3} {
		t.Run(fmt.Sprintf("ring=%d", ring), func(t *testing.T) {
			h := newHarness(t, harnessOptions{configure: func(c *Config) { c.RingSize = ring }})
			sid := h.session(h.token)
			full := h.open(h.token, sid, 0)
			part := h.open(h.token, sid, 0)
			toolTurn(h.env.Srv, 5*time.Millisecond)
			tid := h.send(h.token, sid, "go")
			// The partial client reads up to the first tool result, then drops.
			first := part.until(t, 10*time.Second, func(e sseEvent) bool { return e.Type == "tool_finished" })
			part.close()
			all := full.until(t, 10*time.Second, finished(tid))
			last := first[len(first)-1].ID
			again := h.open(h.token, sid, last)
			rest := again.until(t, 10*time.Second, finished(tid))
			var wantRest []sseEvent
			for _, e := range all {
				if e.ID > last {
					wantRest = append(wantRest, e)
				}
			}
			if ring >= 4096 {
				// Everything is still in memory: exactly the missing events.
				if types(rest) != types(wantRest) {
					t.Fatalf("resumed = %s\nwant      %s", types(rest), types(wantRest))
				}
				for i := range rest {
					if rest[i].ID != wantRest[i].ID || rest[i].Raw != wantRest[i].Raw {
						t.Fatalf("resumed event %d = %d %s, want %d %s", i, rest[i].ID, rest[i].Raw, wantRest[i].ID, wantRest[i].Raw)
					}
				}
			} else {
				// Rebuilt from rows: every stored row after the drop, in
				// order, then the live tail; no id twice, none out of order.
				wantRows := 0
				for _, e := range wantRest {
					if e.Type == "message" {
						wantRows++
					}
				}
				gotRows := 0
				for i, e := range rest {
					if i > 0 && e.ID <= rest[i-1].ID {
						t.Fatalf("resumed ids out of order: %s", types(rest))
					}
					if e.ID <= last {
						t.Fatalf("resumed an event the client had: %d <= %d", e.ID, last)
					}
					if e.Type == "message" {
						gotRows++
					}
				}
				if gotRows != wantRows {
					t.Fatalf("resumed %d rows, want %d: %s", gotRows, wantRows, types(rest))
				}
			}

			// After a restart the old ids still resume from the rows.
			h.stop(time.Second)
			h.start(nil)
			after := h.open(h.token, sid, last)
			tid2 := h.send(h.token, sid, "next")
			evs := after.until(t, 10*time.Second, finished(tid2))
			var rows []string
			for i, e := range evs {
				if i > 0 && e.ID <= evs[i-1].ID {
					t.Fatalf("ids out of order after restart: %d after %d", e.ID, evs[i-1].ID)
				}
				if e.Type == "message" {
					m := e.Data["message"].(map[string]any)
					rows = append(rows, m["role"].(string))
				}
			}
			// The rest of turn 1 from the rows (first tool result, second
			// call, its result, the answer), then turn 2.
			if strings.Join(rows, ",") != "tool,assistant,tool,assistant,user,assistant" {
				t.Fatalf("rows after restart = %v (%s)", rows, types(evs))
			}
		})
	}
}

// TestManySubscribers: 100 clients on one turn all get the same events.
func TestManySubscribers(t *testing.T) {
	h := newHarness(t, harnessOptions{configure: func(c *Config) { c.Limits.Default.Streams = 200 }})
	sid := h.session(h.token)
	const n = 100
	streams := make([]*sseStream, n)
	for i := range streams {
		streams[i] = h.open(h.token, sid, 0)
	}
	toolTurn(h.env.Srv, time.Millisecond)
	tid := h.send(h.token, sid, "go")
	var wg sync.WaitGroup
	got := make([]string, n)
	for i, s := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			evs := s.until(t, 20*time.Second, finished(tid))
			var b strings.Builder
			for _, e := range evs {
				fmt.Fprintf(&b, "%d:%s ", e.ID, e.Type)
			}
			got[i] = b.String()
		}()
	}
	wg.Wait()
	for i := 1; i < n; i++ {
		if got[i] != got[0] {
			t.Fatalf("subscriber %d saw\n%s\nsubscriber 0 saw\n%s", i, got[i], got[0])
		}
	}
}

// TestStalledSubscriber: a client that never reads does not hold up the
// turn; it is dropped (its connection ends) while a client that keeps
// reading, reconnecting with Last-Event-ID whenever it is dropped, gets
// every row and the turn's end.
func TestStalledSubscriber(t *testing.T) {
	h := newHarness(t, harnessOptions{configure: func(c *Config) { c.SubscriberBuffer = 16 }, smallWrites: true})
	sid := h.session(h.token)
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	fmt.Fprintf(conn, "GET /v1/sessions/%s/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", sid, h.token)
	// A long streamed answer: many more events than the stalled client's
	// buffer and socket hold.
	long := strings.Repeat("lorem ipsum dolor sit amet ", 4000)
	h.env.Srv.Script(fakellm.Text(long))
	start := time.Now()
	tid := h.send(h.token, sid, "go")
	evs := h.follow(sid, 0, 60*time.Second, finished(tid))
	if r := resultOf(t, evs[len(evs)-1]); r["exit"] != "completed" || r["final_text"] != long {
		t.Fatalf("result exit = %v", r["exit"])
	}
	msgs := 0
	for _, e := range evs {
		if e.Type == "message" {
			msgs++
		}
	}
	if msgs != 2 {
		t.Fatalf("follower got %d rows, want 2", msgs)
	}
	t.Logf("turn with a stalled subscriber took %s", time.Since(start))
	// The stalled client was dropped: reading it now, its stream ends.
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(conn)
	for {
		line, err := br.ReadString('\n')
		if strings.Contains(line, "dropped") {
			break
		}
		if err != nil {
			t.Fatalf("stalled client was not dropped (read: %v)", err)
		}
	}
}

// TestBusyModes: a message for a busy session queues (FIFO, never inside
// the running turn's tool round), interrupts, or is rejected.
func TestBusyModes(t *testing.T) {
	for _, mode := range []string{BusyQueue, BusyInterrupt, BusyReject} {
		t.Run(mode, func(t *testing.T) {
			h := newHarness(t, harnessOptions{configure: func(c *Config) { c.Busy = mode }})
			sid := h.session(h.token)
			s := h.open(h.token, sid, 0)
			h.env.Srv.Script(fakellm.Calls(fakellm.ToolCall("wait_gate", `{}`)))
			t1 := h.send(h.token, sid, "first")
			<-h.gate.entered // turn 1 is inside its tool round
			code, out := h.do("POST", "/v1/sessions/"+sid+"/messages", h.token, map[string]any{"text": "second"})
			switch mode {
			case BusyReject:
				if code != 409 || errCode(out) != api.CodeSessionBusy {
					t.Fatalf("busy reject = %d %v", code, out)
				}
				h.gate.open()
				s.until(t, 10*time.Second, finished(t1))
				return
			case BusyQueue:
				if code != 202 || out["position"] != float64(1) {
					t.Fatalf("queued = %d %v", code, out)
				}
				h.gate.open()
			}
			t2 := out["turn_id"].(string)
			evs := s.until(t, 10*time.Second, finished(t2))
			var exits []string
			for _, e := range evs {
				if e.Type == "turn_finished" {
					exits = append(exits, e.turn()+"="+resultOf(t, e)["exit"].(string))
				}
			}
			want1 := "completed"
			if mode == BusyInterrupt {
				want1 = "interrupted"
			}
			if strings.Join(exits, " ") != t1+"="+want1+" "+t2+"=completed" {
				t.Fatalf("exits = %v, want %s then %s completed", exits, want1, t2)
			}
			rows := h.env.RowsOf(sid, false)
			var seq []string
			for _, r := range rows {
				seq = append(seq, string(r.Role)+":"+r.TurnID)
			}
			// Turn 2's user row comes after every row of turn 1.
			seen2 := false
			for _, r := range rows {
				if r.TurnID == t2 {
					seen2 = true
				} else if seen2 && r.TurnID == t1 {
					t.Fatalf("a row of turn 1 after turn 2's: %v", seq)
				}
			}
			if !seen2 || rows[len(rows)-1].Text() != "echo: second" {
				t.Fatalf("rows = %v, last %q", seq, rows[len(rows)-1].Text())
			}
			h.env.NoViolations()
		})
	}
}

// TestQueueSurvivesRestart: queued messages are durable; a restart runs
// them, and with handoff: interrupt a turn that was running when the
// process died is marked interrupted with a display-only row, not re-run
// (TestCutOffTurnContinuesAfterRestart has the default, continue).
func TestQueueSurvivesRestart(t *testing.T) {
	h := newHarness(t, harnessOptions{configure: func(c *Config) { c.MaxConcurrentTurns = 1 }})
	a, b := h.session(h.token), h.session(h.token)
	h.env.Srv.Script(fakellm.Calls(fakellm.ToolCall("wait_gate", `{}`)))
	ta := h.send(h.token, a, "first in a")
	<-h.gate.entered
	tb := h.send(h.token, b, "waits for a turn slot") // max_concurrent_turns = 1
	tq := h.send(h.token, a, "queued behind a")
	// Stop without a drain: the running turn is interrupted, the others
	// stay queued.
	h.stop(0)
	q, err := h.env.Store.Queued(context.Background(), "")
	if err != nil || len(q) != 2 || q[0].TurnID != tb || q[1].TurnID != tq {
		t.Fatalf("queue after stop = %+v, %v", q, err)
	}
	// Simulate a kill -9 in the middle of another turn: its message is
	// marked started and its user row stored, but it never finished.
	cs := &store.Session{Principal: "alice"}
	if err := h.env.Store.CreateSession(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	c := cs.ID
	dead := &store.QueuedMessage{SessionID: c, TurnID: "tdead", Text: "killed mid-turn"}
	if err := h.env.Store.Enqueue(context.Background(), dead); err != nil {
		t.Fatal(err)
	}
	_ = h.env.Store.MarkStarted(context.Background(), dead.ID, time.Now())
	row := &store.Message{TurnID: "tdead", Message: llm.NewText(llm.RoleUser, "killed mid-turn")}
	if err := h.env.Store.Append(context.Background(), store.Fence{SessionID: c}, row); err != nil {
		t.Fatal(err)
	}

	h.start(func(c *Config) { c.Handoff = HandoffInterrupt })
	sb := h.open(h.token, b, 0)
	sb.until(t, 10*time.Second, finished(tb))
	sa := h.open(h.token, a, 0)
	sa.until(t, 10*time.Second, finished(tq))
	ra := h.env.RowsOf(a, false)
	if last := ra[len(ra)-1]; last.Text() != "echo: queued behind a" {
		t.Fatalf("session a ends with %q", last.Text())
	}
	for _, r := range ra {
		if r.TurnID == ta && r.Role == llm.RoleAssistant && strings.HasPrefix(r.Text(), "echo:") {
			t.Fatal("the interrupted turn ran to completion")
		}
	}
	// The cut-off turn stored only its user row: the mark is an
	// interrupted answer, so that message is never merged into the next.
	rc := h.env.RowsOf(c, false)
	if len(rc) != 2 || rc[1].Kind != store.RowInterrupted || !strings.Contains(rc[1].Text(), "interrupted") || rc[1].TurnID != "tdead" {
		t.Fatalf("session c rows = %+v", rc)
	}
	sc := h.open(h.token, c, 0)
	sc.until(t, 10*time.Second, finished(h.send(h.token, c, "after the kill")))
	reqs := h.env.Srv.Requests()
	var users []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "user" {
			users = append(users, m.Text)
		}
	}
	if len(users) != 2 || users[0] != "killed mid-turn" || users[1] != "after the kill" {
		t.Fatalf("user messages sent after the cut-off = %q, want the cut-off one and the new one apart", users)
	}
	if q, _ := h.env.Store.Queued(context.Background(), ""); len(q) != 0 {
		t.Fatalf("queue not empty: %+v", q)
	}
}

// TestInterruptOverAPI stops a running turn and cancels a queued one.
func TestInterruptOverAPI(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	sid := h.session(h.token)
	s := h.open(h.token, sid, 0)
	h.env.Srv.Script(fakellm.Calls(fakellm.ToolCall("wait_gate", `{}`)))
	t1 := h.send(h.token, sid, "long")
	<-h.gate.entered
	t2 := h.send(h.token, sid, "never runs")
	if code, out := h.do("POST", "/v1/turns/"+t2+"/interrupt", h.token, nil); code != 202 || out["state"] != "cancelled" {
		t.Fatalf("cancel queued = %d %v", code, out)
	}
	start := time.Now()
	if code, out := h.do("POST", "/v1/turns/"+t1+"/interrupt", h.token, nil); code != 202 || out["state"] != "interrupting" {
		t.Fatalf("interrupt = %d %v", code, out)
	}
	evs := s.until(t, 10*time.Second, finished(t1))
	if time.Since(start) > 5*time.Second {
		t.Errorf("interrupt took %s", time.Since(start))
	}
	if r := resultOf(t, evs[len(evs)-1]); r["exit"] != "interrupted" {
		t.Fatalf("result = %v", r)
	}
	rows := h.env.RowsOf(sid, false)
	var kinds []string
	for _, r := range rows {
		kinds = append(kinds, string(r.Role)+"/"+string(r.Kind))
	}
	// The tool call got its interrupted result, and nothing was written
	// into the middle of the tool round.
	if strings.Join(kinds[:3], " ") != "user/ assistant/ tool/" || strings.Contains(strings.Join(kinds, " "), "unsent") {
		t.Fatalf("rows = %v", kinds)
	}
}

// TestApprovals: a tool that changes things waits for allow / deny /
// always over the API; no answer in time is a refusal the model is told.
func TestApprovals(t *testing.T) {
	h := newHarness(t, harnessOptions{configure: func(c *Config) { c.ApprovalTimeout = 300 * time.Millisecond }})
	sid := h.session(h.token)
	s := h.open(h.token, sid, 0)
	write := func(name string) fakellm.Step {
		return fakellm.Calls(fakellm.ToolCall("write_file", fmt.Sprintf(`{"path":%q,"content":"x"}`, name)))
	}
	h.env.Srv.Script(write("allowed.txt"), fakellm.Text("ok1"), write("denied.txt"), fakellm.Text("ok2"),
		write("always1.txt"), write("always2.txt"), fakellm.Text("ok3"),
		fakellm.Calls(fakellm.ToolCall("shell", `{"command":"touch late.txt"}`)), fakellm.Text("ok4"))
	answer := func(tid, decision string) {
		ev := s.until(t, 10*time.Second, func(e sseEvent) bool { return e.Type == "approval_required" })
		last := ev[len(ev)-1]
		call := last.Data["call_id"].(string)
		if code, out := h.do("POST", "/v1/turns/"+tid+"/approvals/"+call, h.token, map[string]any{"decision": decision}); code != 200 {
			t.Fatalf("answer %s = %d %v", decision, code, out)
		}
		// Bob cannot answer alice's approvals.
		if code, _ := h.do("POST", "/v1/turns/"+tid+"/approvals/"+call, h.other, map[string]any{"decision": "allow"}); code != 404 {
			t.Fatalf("other principal's answer = %d", code)
		}
		s.until(t, 10*time.Second, finished(tid))
	}
	answer(h.send(h.token, sid, "write allowed"), "allow")
	answer(h.send(h.token, sid, "write denied"), "deny")
	answer(h.send(h.token, sid, "write twice"), "always") // the second call asks nobody
	t4 := h.send(h.token, sid, "write late")
	evs := s.until(t, 10*time.Second, finished(t4))
	if !strings.Contains(types(evs), "approval_required approval_resolved") {
		t.Fatalf("late: %s", types(evs))
	}
	for _, f := range []struct {
		name string
		want bool
	}{{"allowed.txt", true}, {"denied.txt", false}, {"always1.txt", true}, {"always2.txt", true}, {"late.txt", false}} {
		_, err := os.Stat(filepath.Join(h.env.Workspace, f.name))
		if (err == nil) != f.want {
			t.Errorf("%s exists = %v, want %v", f.name, err == nil, f.want)
		}
	}
	// The model was told about the timeout.
	reqs := h.env.Srv.Requests()
	lastReq := reqs[len(reqs)-1]
	tr := lastReq.Messages[len(lastReq.Messages)-1]
	if tr.Role != "tool" || !strings.Contains(tr.Text, "no one approved") {
		t.Fatalf("last tool result sent = %+v", tr)
	}
	// /metrics counts each request and how it ended.
	scrape := telemetrytest.ParseProm(t, h.metrics(t))
	for outcome, want := range map[string]float64{"asked": 4, "allow_user": 1, "deny_user": 1, "always_user": 1, "deny_timeout": 1} {
		if got, _, _ := scrape.Value("talaria_approvals_total", map[string]string{"talaria_approval_outcome": outcome}); got != want {
			t.Errorf("talaria_approvals_total{%s} = %v, want %v", outcome, got, want)
		}
	}
	h.env.NoViolations()
}

// TestGracefulShutdown: running turns get the drain time; after it they
// are interrupted, subscribers get turn_finished, streams end, and posts
// during the drain are refused.
func TestGracefulShutdown(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	sid := h.session(h.token)
	s := h.open(h.token, sid, 0)
	h.env.Srv.Script(fakellm.Calls(fakellm.ToolCall("wait_gate", `{}`)), fakellm.Text("done"))
	tid := h.send(h.token, sid, "long")
	<-h.gate.entered
	done := make(chan error, 1)
	go func() { done <- h.g.Shutdown(context.Background(), 200*time.Millisecond) }()
	for !h.g.draining.Load() {
		time.Sleep(time.Millisecond)
	}
	if code, out := h.do("POST", "/v1/sessions/"+sid+"/messages", h.token, map[string]any{"text": "x"}); code != 503 || errCode(out) != api.CodeShuttingDown {
		t.Fatalf("post while draining = %d %v", code, out)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	evs := s.until(t, 10*time.Second, finished(tid))
	if r := resultOf(t, evs[len(evs)-1]); r["exit"] != "interrupted" {
		t.Fatalf("result = %v", r)
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the event stream did not end at shutdown")
	}
	// The lease was released: the session takes a new turn at once.
	if _, err := h.env.Store.AcquireLease(context.Background(), sid, "other-holder", time.Minute); err != nil {
		t.Fatalf("lease still held after shutdown: %v", err)
	}
	_ = json.Valid
}
