package storetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

var promptCases = []testCase[store.SessionService]{
	{"StampAndExtraRoundTrip", testPromptRoundTrip},
	{"SetSystemPromptWithRow", testSetSystemPrompt},
	{"SetSystemPromptStaleStamp", testSetSystemPromptStale},
	{"SetSystemPromptFenced", testSetSystemPromptFenced},
	{"SetSystemPromptOneWinner", testSetSystemPromptOneWinner},
}

func testPromptRoundTrip(t *testing.T, s store.SessionService) {
	a := newSession(t, s, func(ss *store.Session) {
		ss.SystemPrompt, ss.PromptStamp, ss.PromptExtra = "base\n\nextra\n", `{"tools":{"a":"1"}}`, "extra 🚀\x00bytes"
	})
	got := getSession(t, s, a.ID)
	if got.SystemPrompt != a.SystemPrompt || got.PromptStamp != a.PromptStamp || got.PromptExtra != a.PromptExtra {
		t.Fatalf("read back prompt %q stamp %q extra %q", got.SystemPrompt, got.PromptStamp, got.PromptExtra)
	}
}

func testSetSystemPrompt(t *testing.T, s store.SessionService) {
	a := newSession(t, s, func(ss *store.Session) { ss.SystemPrompt, ss.PromptStamp = "old prompt", "s1" })
	l := acquire(t, s, a.ID, "A")
	appendMsgs(t, s, l.Fence(), text(llm.RoleUser, "hi"))
	row := &store.Message{Message: llm.NewText(llm.RoleAssistant, "rebuilt"), Kind: store.RowPromptRebuilt, Synthetic: true}
	if err := s.SetSystemPrompt(ctx(t), l.Fence(), "s1", "new prompt", "s2", row); err != nil {
		t.Fatalf("SetSystemPrompt: %v", err)
	}
	if row.ID == 0 || row.Seq != 2 || row.SessionID != a.ID {
		t.Errorf("row not assigned: id %d seq %d session %q", row.ID, row.Seq, row.SessionID)
	}
	got := getSession(t, s, a.ID)
	if got.SystemPrompt != "new prompt" || got.PromptStamp != "s2" {
		t.Fatalf("after SetSystemPrompt: prompt %q stamp %q", got.SystemPrompt, got.PromptStamp)
	}
	rows := load(t, s, a.ID, store.MessageQuery{})
	if len(rows) != 2 || rows[1].Kind != store.RowPromptRebuilt || rows[1].Text() != "rebuilt" {
		t.Fatalf("rows %v", texts(rows))
	}
	// No rows: the prompt alone.
	if err := s.SetSystemPrompt(ctx(t), l.Fence(), "s2", "third", "s3"); err != nil {
		t.Fatalf("SetSystemPrompt without rows: %v", err)
	}
	if got := getSession(t, s, a.ID); got.SystemPrompt != "third" || got.PromptStamp != "s3" {
		t.Fatalf("prompt %q stamp %q", got.SystemPrompt, got.PromptStamp)
	}
}

func testSetSystemPromptStale(t *testing.T, s store.SessionService) {
	a := newSession(t, s, func(ss *store.Session) { ss.SystemPrompt, ss.PromptStamp = "kept", "s2" })
	l := acquire(t, s, a.ID, "A")
	err := s.SetSystemPrompt(ctx(t), l.Fence(), "s1", "lost", "s3", text(llm.RoleAssistant, "not written"))
	if !errors.Is(err, store.ErrStampChanged) {
		t.Fatalf("stale stamp: err %v, want ErrStampChanged", err)
	}
	if got := getSession(t, s, a.ID); got.SystemPrompt != "kept" || got.PromptStamp != "s2" {
		t.Fatalf("stale write changed the session: prompt %q stamp %q", got.SystemPrompt, got.PromptStamp)
	}
	if rows := load(t, s, a.ID, store.MessageQuery{}); len(rows) != 0 {
		t.Fatalf("stale write appended %v", texts(rows))
	}
}

func testSetSystemPromptFenced(t *testing.T, s store.SessionService) {
	a := newSession(t, s, func(ss *store.Session) { ss.SystemPrompt, ss.PromptStamp = "kept", "s1" })
	old := acquire(t, s, a.ID, "A")
	if err := s.ReleaseLease(ctx(t), old); err != nil {
		t.Fatal(err)
	}
	acquire(t, s, a.ID, "B")
	err := s.SetSystemPrompt(ctx(t), old.Fence(), "s1", "lost", "s2")
	wantKind(t, "SetSystemPrompt with a stale token", err, store.ErrLeaseLost, store.KindLeaseLost)
	if got := getSession(t, s, a.ID); got.SystemPrompt != "kept" || got.PromptStamp != "s1" {
		t.Fatalf("fenced-out write changed the session: prompt %q stamp %q", got.SystemPrompt, got.PromptStamp)
	}
}

// Writers that saw the same stamp race: exactly one rebuild lands, with
// its row; the others write nothing.
func testSetSystemPromptOneWinner(t *testing.T, s store.SessionService) {
	a := newSession(t, s, func(ss *store.Session) { ss.SystemPrompt, ss.PromptStamp = "old", "s1" })
	l := acquire(t, s, a.ID, "A")
	const writers = 8
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			errs[i] = s.SetSystemPrompt(t.Context(), l.Fence(), "s1", "new", "s2",
				&store.Message{Message: llm.NewText(llm.RoleAssistant, "rebuilt"), Kind: store.RowPromptRebuilt})
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrStampChanged):
			t.Errorf("loser: %v, want ErrStampChanged", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d writers rebuilt the prompt, want 1", won)
	}
	if rows := load(t, s, a.ID, store.MessageQuery{}); len(rows) != 1 {
		t.Fatalf("%d rebuild rows, want 1", len(rows))
	}
}
