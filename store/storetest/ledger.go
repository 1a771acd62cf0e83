package storetest

import (
	"testing"

	"github.com/talaria-agent/talaria/store"
)

var ledgerCases = []testCase[LedgerStore]{
	{"StartedThenFinished", testLedgerStartFinish},
	{"StartIsFenced", testLedgerFenced},
	{"RestartReplaces", testLedgerRestart},
	{"FinishWithoutStart", testLedgerFinishOnly},
	{"UnknownSessionAndDelete", testLedgerSessions},
}

func toolCalls(t *testing.T, l store.ToolLedger, sessionID, turnID string) []store.ToolCallRecord {
	t.Helper()
	got, err := l.ToolCalls(t.Context(), sessionID, turnID)
	if err != nil {
		t.Fatalf("ToolCalls(%s, %q): %v", sessionID, turnID, err)
	}
	return got
}

// A started call is listed as started with everything it was given; once
// finished it carries its result and after-hash; ToolCalls filters by turn
// and lists calls in the order they started.
func testLedgerStartFinish(t *testing.T, s LedgerStore) {
	c, l := ctx(t), s
	a := newSession(t, s)
	lease := acquire(t, s, a.ID, "node-a")
	recs := []*store.ToolCallRecord{
		{SessionID: a.ID, TurnID: "t1", CallID: "c2", Tool: "write_file", Node: "node-a", Fence: lease.Token,
			ArgsHash: "h2", Path: "/w/f.txt", BeforeHash: store.HashAbsent, StartedAt: at(1)},
		{SessionID: a.ID, TurnID: "t1", CallID: "c1", Tool: "read_file", Node: "node-a", Fence: lease.Token, ArgsHash: "h1", StartedAt: at(2)},
		{SessionID: a.ID, TurnID: "t2", CallID: "c3", Tool: "shell", Node: "node-a", Fence: lease.Token, ArgsHash: "h3", StartedAt: at(3)},
	}
	for _, r := range recs {
		if err := l.ToolStarted(c, r); err != nil {
			t.Fatalf("ToolStarted(%s): %v", r.CallID, err)
		}
		if r.State != store.ToolCallStarted {
			t.Fatalf("ToolStarted left State %q", r.State)
		}
	}
	got := toolCalls(t, l, a.ID, "t1")
	if len(got) != 2 || got[0].CallID != "c2" || got[1].CallID != "c1" {
		t.Fatalf("ToolCalls(t1) = %+v; want c2, c1 in start order", got)
	}
	want := *recs[0]
	if g := got[0]; g.SessionID != want.SessionID || g.TurnID != "t1" || g.Tool != "write_file" || g.Node != "node-a" ||
		g.Fence != lease.Token || g.ArgsHash != "h2" || g.State != store.ToolCallStarted || g.Path != "/w/f.txt" ||
		g.BeforeHash != store.HashAbsent || g.AfterHash != "" || g.ResultID != 0 || !g.StartedAt.Equal(at(1)) || !g.FinishedAt.IsZero() {
		t.Fatalf("started record = %+v; want %+v", g, want)
	}
	fin := &store.ToolCallRecord{SessionID: a.ID, TurnID: "t1", CallID: "c2", ResultID: 42, IsError: true, AfterHash: "after", FinishedAt: at(5)}
	if err := l.ToolFinished(c, fin); err != nil {
		t.Fatalf("ToolFinished: %v", err)
	}
	got = toolCalls(t, l, a.ID, "t1")
	if g := got[0]; g.State != store.ToolCallFinished || g.ResultID != 42 || !g.IsError || g.AfterHash != "after" ||
		!g.FinishedAt.Equal(at(5)) || g.BeforeHash != store.HashAbsent || g.Node != "node-a" || !g.StartedAt.Equal(at(1)) {
		t.Fatalf("finished record = %+v", g)
	}
	if got[1].State != store.ToolCallStarted {
		t.Fatalf("finishing c2 changed c1: %+v", got[1])
	}
	if all := toolCalls(t, l, a.ID, ""); len(all) != 3 || all[2].CallID != "c3" {
		t.Fatalf("ToolCalls(all) = %+v; want 3 calls ending with c3", all)
	}
}

// A node whose lease was taken over cannot record a start (so it must not
// run the call); nothing is recorded. Fence 0 is unfenced.
func testLedgerFenced(t *testing.T, s LedgerStore) {
	c, l := ctx(t), s
	a := newSession(t, s)
	old := acquire(t, s, a.ID, "node-a")
	if err := s.ReleaseLease(c, old); err != nil {
		t.Fatal(err)
	}
	cur := acquire(t, s, a.ID, "node-b")
	for _, tok := range []int64{old.Token, 99} {
		err := l.ToolStarted(c, &store.ToolCallRecord{SessionID: a.ID, TurnID: "t1", CallID: "c1", Tool: "shell", Fence: tok})
		wantKind(t, "ToolStarted with a stale token", err, store.ErrLeaseLost, store.KindLeaseLost)
	}
	if got := toolCalls(t, l, a.ID, ""); len(got) != 0 {
		t.Fatalf("a refused start was recorded: %+v", got)
	}
	if err := s.ReleaseLease(c, cur); err != nil {
		t.Fatal(err)
	}
	err := l.ToolStarted(c, &store.ToolCallRecord{SessionID: a.ID, TurnID: "t1", CallID: "c1", Tool: "shell", Fence: cur.Token})
	wantKind(t, "ToolStarted under a released lease", err, store.ErrLeaseLost, store.KindLeaseLost)
	if err := l.ToolStarted(c, &store.ToolCallRecord{SessionID: a.ID, TurnID: "t1", CallID: "c1", Tool: "shell"}); err != nil {
		t.Fatalf("unfenced ToolStarted: %v", err)
	}
}

// Starting a recorded call again (a re-run on the node that took the turn
// over) replaces its record: started again, the new node and fence, no
// result; its place in the order stays.
func testLedgerRestart(t *testing.T, s LedgerStore) {
	c, l := ctx(t), s
	a := newSession(t, s)
	for _, r := range []*store.ToolCallRecord{
		{SessionID: a.ID, TurnID: "t1", CallID: "c1", Tool: "read_file", Node: "node-a", Fence: 0, StartedAt: at(1)},
		{SessionID: a.ID, TurnID: "t1", CallID: "c2", Tool: "read_file", Node: "node-a", StartedAt: at(2)},
	} {
		if err := l.ToolStarted(c, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.ToolFinished(c, &store.ToolCallRecord{SessionID: a.ID, CallID: "c1", ResultID: 7, AfterHash: "x"}); err != nil {
		t.Fatal(err)
	}
	lease := acquire(t, s, a.ID, "node-b")
	if err := l.ToolStarted(c, &store.ToolCallRecord{SessionID: a.ID, TurnID: "t1", CallID: "c1", Tool: "read_file",
		Node: "node-b", Fence: lease.Token, StartedAt: at(9)}); err != nil {
		t.Fatal(err)
	}
	got := toolCalls(t, l, a.ID, "t1")
	if len(got) != 2 || got[0].CallID != "c1" {
		t.Fatalf("ToolCalls = %+v; want c1 first still", got)
	}
	if g := got[0]; g.State != store.ToolCallStarted || g.Node != "node-b" || g.Fence != lease.Token || g.ResultID != 0 ||
		g.AfterHash != "" || !g.FinishedAt.IsZero() || !g.StartedAt.Equal(at(9)) {
		t.Fatalf("restarted record = %+v", g)
	}
}

// A finish with no start (its start record lost to nothing but a bug, or
// a caller that only records outcomes) is recorded whole.
func testLedgerFinishOnly(t *testing.T, s LedgerStore) {
	c, l := ctx(t), s
	a := newSession(t, s)
	if err := l.ToolFinished(c, &store.ToolCallRecord{SessionID: a.ID, TurnID: "t1", CallID: "c1", Tool: "shell",
		Node: "n", ArgsHash: "h", ResultID: 3}); err != nil {
		t.Fatal(err)
	}
	got := toolCalls(t, l, a.ID, "t1")
	if len(got) != 1 || got[0].State != store.ToolCallFinished || got[0].Tool != "shell" || got[0].ResultID != 3 ||
		got[0].StartedAt.IsZero() || got[0].FinishedAt.IsZero() {
		t.Fatalf("ToolCalls = %+v", got)
	}
}

// An unknown session is KindNotFound; DeleteSession removes its records.
func testLedgerSessions(t *testing.T, s LedgerStore) {
	c, l := ctx(t), s
	err := l.ToolStarted(c, &store.ToolCallRecord{SessionID: "nope", TurnID: "t", CallID: "c", Tool: "shell"})
	wantKind(t, "ToolStarted on an unknown session", err, store.ErrNotFound, store.KindNotFound)
	err = l.ToolFinished(c, &store.ToolCallRecord{SessionID: "nope", TurnID: "t", CallID: "c", Tool: "shell"})
	wantKind(t, "ToolFinished on an unknown session", err, store.ErrNotFound, store.KindNotFound)
	a, b := newSession(t, s), newSession(t, s)
	for _, id := range []string{a.ID, b.ID} {
		if err := l.ToolStarted(c, &store.ToolCallRecord{SessionID: id, TurnID: "t", CallID: "c", Tool: "shell"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteSession(c, a.ID); err != nil {
		t.Fatal(err)
	}
	if got := toolCalls(t, l, a.ID, ""); len(got) != 0 {
		t.Fatalf("DeleteSession left %d ledger records", len(got))
	}
	if got := toolCalls(t, l, b.ID, ""); len(got) != 1 {
		t.Fatalf("DeleteSession of another session removed this one's records: %+v", got)
	}
}
