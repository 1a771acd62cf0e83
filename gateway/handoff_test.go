package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/testing/testenv"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/tool"
	"github.com/talaria-agent/talaria/turn"
)

// TestCutOffTurnContinuesAfterRestart: a turn whose process died inside a
// tool round is continued by the next start (handoff: continue, the
// default) from its stored rows: the call that changes things and had
// started is not re-run (its result says it may or may not have taken
// effect), the model is called again, the stream shows one handoff status
// and the turn's result. Past handoff_max, or with handoff: interrupt (per
// server or per principal), it is marked cut off instead.
func TestCutOffTurnContinuesAfterRestart(t *testing.T) {
	cases := []struct {
		name      string
		configure func(*Config)
		prior     int // handoffs the turn already had
		exit      turn.Exit
	}{
		{"continue", nil, 0, turn.ExitCompleted},
		{"second handoff", nil, 1, turn.ExitCompleted},
		{"limit", nil, 2, turn.ExitHandoffLimit},
		{"limit per principal", func(c *Config) {
			c.Limits.Principals = map[string]Limit{"alice": {HandoffMax: 1}}
		}, 1, turn.ExitHandoffLimit},
		{"interrupt", func(c *Config) { c.Handoff = HandoffInterrupt }, 0, turn.ExitInterrupted},
		{"interrupt per principal", func(c *Config) {
			c.Limits.Principals = map[string]Limit{"alice": {Handoff: HandoffInterrupt}}
		}, 0, turn.ExitInterrupted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var effects atomic.Int32
			effect := testenv.MustFunc(tool.Info{Name: "effect", Description: "changes something", Parameters: testenv.ObjectSchema(`{}`)},
				func(context.Context, json.RawMessage) (tool.Result, error) {
					effects.Add(1)
					return tool.Result{Content: "done"}, nil
				})
			h := newHarness(t, harnessOptions{envOpts: testenv.Options{ExtraTools: []tool.Tool{effect}}, configure: tc.configure})
			h.stop(0)
			ctx := context.Background()
			st := h.env.Store
			cs := &store.Session{Principal: "alice"}
			if err := st.CreateSession(ctx, cs); err != nil {
				t.Fatal(err)
			}
			// What a process killed inside the effect call leaves.
			dead := &store.QueuedMessage{SessionID: cs.ID, TurnID: "tdead", Text: "change it"}
			if err := st.Enqueue(ctx, dead); err != nil {
				t.Fatal(err)
			}
			if err := st.MarkStarted(ctx, dead.ID, time.Now()); err != nil {
				t.Fatal(err)
			}
			call := llm.ToolCall{ID: "c1", Name: "effect", Arguments: "{}"}
			if err := st.Append(ctx, store.Fence{SessionID: cs.ID},
				&store.Message{TurnID: "tdead", Message: llm.NewText(llm.RoleUser, "change it")},
				&store.Message{TurnID: "tdead", Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}}}); err != nil {
				t.Fatal(err)
			}
			if err := st.ToolStarted(ctx, &store.ToolCallRecord{SessionID: cs.ID, TurnID: "tdead", CallID: "c1", Tool: "effect", Node: "dead-node"}); err != nil {
				t.Fatal(err)
			}
			for i := range tc.prior {
				if err := st.AppendTurnEvents(ctx, store.TurnEvent{SessionID: cs.ID, TurnID: "tdead", Seq: handoffSeq + i + 1, Kind: "handoff"}); err != nil {
					t.Fatal(err)
				}
			}
			h.start(tc.configure)
			deadline := time.Now().Add(10 * time.Second)
			for {
				q, err := st.Queued(ctx, cs.ID)
				if err == nil && len(q) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the cut-off turn is still queued: %+v %v; rows %+v", q, err, h.env.RowsOf(cs.ID, false))
				}
				time.Sleep(10 * time.Millisecond)
			}
			if effects.Load() != 0 {
				t.Fatalf("the started effect call ran again (%d times)", effects.Load())
			}
			rows := h.env.RowsOf(cs.ID, false)
			var results, answers int
			var resultText string
			for _, r := range rows {
				switch {
				case r.Role == llm.RoleTool:
					results++
					resultText = r.Text()
				case r.Role == llm.RoleAssistant && r.Kind == store.RowNormal && len(r.ToolCalls) == 0:
					answers++
				}
			}
			evs, err := st.TurnEvents(ctx, cs.ID, "tdead")
			if err != nil {
				t.Fatal(err)
			}
			handoffs := 0
			for _, e := range evs {
				if e.Kind == "handoff" {
					handoffs++
				}
			}
			if tc.exit != turn.ExitCompleted {
				if results != 0 || answers != 0 || handoffs != tc.prior || len(h.env.Srv.Requests()) != 0 {
					t.Fatalf("a turn that may not continue ran: %d results, %d answers, %d handoffs, %d model calls",
						results, answers, handoffs, len(h.env.Srv.Requests()))
				}
				last := rows[len(rows)-1]
				if want := map[turn.Exit]string{turn.ExitHandoffLimit: "handoff_max", turn.ExitInterrupted: "not re-run"}[tc.exit]; !strings.Contains(last.Text(), want) {
					t.Fatalf("the cut-off row says %q; want it to mention %q", last.Text(), want)
				}
				return
			}
			if results != 1 || !strings.Contains(resultText, "may or may not have taken effect") || answers != 1 {
				t.Fatalf("rows after the handoff: %d results (%q), %d answers; want the uncertain result and one answer", results, resultText, answers)
			}
			if handoffs != tc.prior+1 {
				t.Fatalf("%d handoffs recorded; want %d", handoffs, tc.prior+1)
			}
			s := h.open(h.token, cs.ID, 0)
			got := s.until(t, 10*time.Second, finished("tdead"))
			var status []sseEvent
			for _, ev := range got {
				if ev.Type == "status" && ev.Data["kind"] == "handoff" {
					status = append(status, ev)
				}
				if ev.Type == "turn_started" && ev.turn() == "tdead" {
					t.Errorf("a continued turn was announced as started again: %s", ev.Raw)
				}
			}
			if len(status) != 1 || !strings.Contains(status[0].Data["line"].(string), "dead-node") {
				t.Fatalf("handoff status events %v; want one naming the dead node", status)
			}
			if r := resultOf(t, got[len(got)-1]); r["exit"] != string(turn.ExitCompleted) {
				t.Fatalf("result %v", r)
			}
			h.env.NoViolations()
		})
	}
}
