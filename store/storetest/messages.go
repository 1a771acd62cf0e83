package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

var messageCases = []testCase[store.SessionService]{
	{"AppendAssignsFields", testAppendAssigns},
	{"RoundTripEveryField", testRoundTrip},
	{"AppendNothing", testAppendNothing},
	{"AppendUnknownSession", testAppendUnknown},
	{"AppendEndedSession", testAppendEnded},
	{"QueryAfterSeqAndLimit", testQueryPaging},
	{"QuerySpareCapacity", testQuerySpare},
	{"ArchivedFiltering", testArchived},
	{"Replace", testReplace},
	{"Delete", testDelete},
	{"SeqNeverReused", testSeqNeverReused},
	{"IDNeverReused", testIDNeverReused},
	{"AppendMovesSessionUp", testAppendMovesSessionUp},
	{"EmptySession", testEmptySession},
	{"SessionsIsolated", testSessionsIsolated},
	{"NoAliasing", testNoAliasing},
}

// testNoAliasing: what a caller passed to a write or got from a read is its
// own; changing it afterwards changes nothing stored (an in-memory backend
// must copy).
func testNoAliasing(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	f := store.Fence{SessionID: a.ID}
	mk := func() *store.Message {
		return &store.Message{Message: llm.Message{Role: llm.RoleAssistant,
			Content:   []llm.Part{llm.TextPart("kept"), {Type: llm.PartImage, MediaType: "image/png", Data: []byte{1, 2, 3}}},
			ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"a"}`}},
			Reasoning: &llm.Reasoning{Text: "why", Blocks: []llm.ThinkingBlock{{Type: "thinking", Thinking: "t"}},
				Items: []json.RawMessage{json.RawMessage(`{"a":1}`)}}}}
	}
	in := mk()
	appendMsgs(t, s, f, in)
	want := *mk()
	want.ID, want.Seq, want.SessionID, want.CreatedAt = in.ID, in.Seq, in.SessionID, in.CreatedAt
	scribble := func(m *store.Message) {
		m.Content[0].Text = "changed"
		m.Content[1].Data[0] = 9
		m.ToolCalls[0].Arguments = "{}"
		m.Reasoning.Text = "changed"
		m.Reasoning.Blocks[0].Thinking = "changed"
		m.Reasoning.Items[0][1] = 'b'
	}
	scribble(in)
	got := load(t, s, a.ID, store.MessageQuery{})
	if len(got) != 1 {
		t.Fatalf("rows = %d", len(got))
	}
	if err := sameMessage(want, got[0]); err != nil {
		t.Fatalf("changing the appended value changed the stored row: %v", err)
	}
	scribble(&got[0])
	if err := sameMessage(want, load(t, s, a.ID, store.MessageQuery{})[0]); err != nil {
		t.Fatalf("changing a read row changed the stored row: %v", err)
	}
	sess := getSession(t, s, a.ID)
	sess.Title = "changed"
	if getSession(t, s, a.ID).Title == "changed" {
		t.Fatal("changing a read session changed the stored one")
	}
}

func testAppendAssigns(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	f := store.Fence{SessionID: a.ID}
	given := at(100)
	m1, m2, m3 := text(llm.RoleUser, "one"), text(llm.RoleAssistant, "two"), text(llm.RoleUser, "three")
	m2.CreatedAt = given
	before := time.Now().Add(-time.Minute)
	appendMsgs(t, s, f, m1, m2, m3)
	for i, m := range []*store.Message{m1, m2, m3} {
		if m.Seq != int64(i+1) {
			t.Errorf("message %d: Seq = %d, want %d", i, m.Seq, i+1)
		}
		if m.ID <= 0 {
			t.Errorf("message %d: ID = %d", i, m.ID)
		}
		if m.SessionID != a.ID {
			t.Errorf("message %d: SessionID = %q", i, m.SessionID)
		}
	}
	if !(m1.ID < m2.ID && m2.ID < m3.ID) {
		t.Errorf("IDs not increasing: %d %d %d", m1.ID, m2.ID, m3.ID)
	}
	if m1.CreatedAt.Before(before) || m3.CreatedAt.Before(before) {
		t.Errorf("CreatedAt not filled: %v, %v", m1.CreatedAt, m3.CreatedAt)
	}
	if !m2.CreatedAt.Equal(given) {
		t.Errorf("given CreatedAt replaced: %v", m2.CreatedAt)
	}
	m4 := text(llm.RoleAssistant, "four")
	appendMsgs(t, s, f, m4)
	if m4.Seq != 4 {
		t.Fatalf("next Append Seq = %d, want 4", m4.Seq)
	}
	got := load(t, s, a.ID, store.MessageQuery{})
	for i, want := range []*store.Message{m1, m2, m3, m4} {
		if err := sameMessage(*want, got[i]); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
	}
}

// roundTripMessages exercises every field and awkward value.
func roundTripMessages() []*store.Message {
	allBytes := make([]byte, 256)
	for i := range allBytes {
		allBytes[i] = byte(i)
	}
	loc := time.FixedZone("UTC+5:45", 5*3600+45*60)
	return []*store.Message{
		{TurnID: "turn-1", Message: llm.NewText(llm.RoleUser,
			"Unicode: 日本語, العربية, emoji 👩🏽‍💻, combining é, zero-width\u200bjoiner, tab\t, newline\n, quote \" and \\"),
			CreatedAt: base.In(loc)},
		{TurnID: "turn-1", Message: llm.Message{Role: llm.RoleUser, Content: []llm.Part{
			llm.TextPart("look at this:"),
			{Type: llm.PartImage, MediaType: "image/png", Data: allBytes},
			{Type: llm.PartImage, URL: "https://example.com/cat.jpg?size=large&x=1"},
			llm.TextPart(" and this"),
		}}},
		{TurnID: "turn-1", Message: llm.Message{Role: llm.RoleUser, Content: []llm.Part{llm.TextPart("")}}},
		{TurnID: "turn-1", Message: llm.Message{Role: llm.RoleUser,
			Content: []llm.Part{{Type: llm.PartImage, MediaType: "image/jpeg", Data: []byte{0xff, 0xd8, 0xff, 0}}}}},
		{
			TurnID: "turn-1",
			Message: llm.Message{
				Role: llm.RoleAssistant,
				ToolCalls: []llm.ToolCall{
					{ID: "call_1", Name: "read_file", Arguments: `{"path": "a.go", `}, // truncated, invalid JSON
					{ID: "call_2", Name: "shell", Arguments: "{ \"cmd\" :\n \"echo \\u00e9 <b>&amp;\" }"},
					{ID: "call_3", Name: "noargs", Arguments: ""},
				},
				Reasoning: &llm.Reasoning{Text: "Let me think…", Signature: "sig+/==", Redacted: "opaque\x01blob"},
			},
			FinishReason: llm.FinishToolCalls,
			Usage: llm.Usage{InputTokens: 1200, OutputTokens: 80, CacheReadTokens: 1000, CacheWriteTokens: 200,
				ReasoningTokens: 30, Reported: true},
			Provider: "anthropic",
			Model:    "claude-test",
		},
		{TurnID: "turn-1", Message: llm.NewToolResult(llm.ToolCall{ID: "call_1", Name: "read_file"},
			"error: invalid arguments\x00 (a NUL byte from a binary file)", true)},
		{TurnID: "turn-1", Message: llm.NewToolResult(llm.ToolCall{ID: "call_2", Name: "shell"},
			"é <b>&amp;\n", false)},
		{TurnID: "turn-1", Message: llm.Message{Role: llm.RoleAssistant, Reasoning: &llm.Reasoning{}},
			APIContent: "[response interrupted]", Kind: store.RowInterrupted, FinishReason: llm.FinishLength},
		{TurnID: "turn-2", Message: llm.NewText(llm.RoleUser, "Continue."), Kind: store.RowNudge, Synthetic: true},
		{TurnID: "turn-2", Message: llm.NewText(llm.RoleUser, "Budget notice"), Kind: store.RowNotice, Synthetic: true},
		{TurnID: "turn-2", Message: llm.NewText(llm.RoleAssistant, "Provider failed: 529"), Kind: store.RowFailure,
			Synthetic: true, Provider: "openai", Model: "gpt-test"},
		{TurnID: "turn-2", Message: llm.NewText(llm.RoleUser, "Summary of earlier work"), Kind: store.RowSummary,
			Synthetic: true, Archived: true},
		{TurnID: "turn-2", Message: llm.NewText(llm.RoleAssistant, "Done."), FinishReason: llm.FinishStop,
			Usage: llm.Usage{Reported: true}},
		{TurnID: "turn-2", Message: llm.Message{Role: llm.RoleAssistant}, FinishReason: llm.FinishContentFilter},
		{TurnID: "", Message: llm.NewText(llm.RoleSystem, "system row")},
	}
}

func testRoundTrip(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	msgs := roundTripMessages()
	appendMsgs(t, s, store.Fence{SessionID: a.ID}, msgs...)
	got := load(t, s, a.ID, store.MessageQuery{IncludeArchived: true})
	if len(got) != len(msgs) {
		t.Fatalf("read %d rows, wrote %d", len(got), len(msgs))
	}
	for i, want := range msgs {
		t.Run(fmt.Sprintf("row %d", i), func(t *testing.T) {
			if err := sameMessage(*want, got[i]); err != nil {
				t.Fatal(err)
			}
		})
	}
	// The invalid JSON arguments come back byte for byte.
	if args := got[4].ToolCalls[0].Arguments; args != `{"path": "a.go", ` {
		t.Fatalf("tool arguments = %q", args)
	}
}

func testAppendNothing(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	if err := s.Append(ctx(t), store.Fence{SessionID: a.ID}); err != nil {
		t.Fatalf("Append of nothing: %v", err)
	}
	if got := load(t, s, a.ID, store.MessageQuery{IncludeArchived: true}); len(got) != 0 {
		t.Fatalf("rows = %d", len(got))
	}
}

func testAppendUnknown(t *testing.T, s store.SessionService) {
	c := ctx(t)
	for _, f := range []store.Fence{{SessionID: "nope"}, {SessionID: "nope", Token: 1}} {
		m := text(llm.RoleUser, "hi")
		wantKind(t, fmt.Sprintf("Append %+v", f), s.Append(c, f, m), store.ErrNotFound, store.KindNotFound)
		if m.ID != 0 || m.Seq != 0 {
			t.Fatalf("failed Append assigned ID %d Seq %d", m.ID, m.Seq)
		}
		wantKind(t, "Replace", s.Replace(c, f, 10, text(llm.RoleUser, "x")), store.ErrNotFound, store.KindNotFound)
		wantKind(t, "Delete", s.Delete(c, f, 1), store.ErrNotFound, store.KindNotFound)
	}
}

func testAppendEnded(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	l := acquire(t, s, a.ID, "h")
	appendMsgs(t, s, l.Fence(), text(llm.RoleUser, "before"))
	c := ctx(t)
	if err := s.EndSession(c, a.ID, store.EndCompression); err != nil {
		t.Fatal(err)
	}
	for _, f := range []store.Fence{l.Fence(), {SessionID: a.ID}} {
		for name, err := range map[string]error{
			"Append":  s.Append(c, f, text(llm.RoleUser, "after")),
			"Replace": s.Replace(c, f, 1, text(llm.RoleUser, "after")),
			"Delete":  s.Delete(c, f, 1),
		} {
			if !errors.Is(err, store.ErrEnded) {
				t.Fatalf("%s with %+v to an ended session: %v, want ErrEnded", name, f, err)
			}
		}
	}
	got := load(t, s, a.ID, store.MessageQuery{IncludeArchived: true})
	if fmt.Sprint(texts(got)) != "[before]" || got[0].Archived {
		t.Fatalf("ended session changed: %v", texts(got))
	}
}

func testQueryPaging(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	f := store.Fence{SessionID: a.ID}
	for i := range 6 {
		appendMsgs(t, s, f, text(llm.RoleUser, fmt.Sprint("m", i+1)))
	}
	tests := []struct {
		name string
		q    store.MessageQuery
		want string
	}{
		{"all", store.MessageQuery{}, "[1 2 3 4 5 6]"},
		{"after 4", store.MessageQuery{AfterSeq: 4}, "[5 6]"},
		{"limit 2", store.MessageQuery{Limit: 2}, "[1 2]"},
		{"after 2 limit 3", store.MessageQuery{AfterSeq: 2, Limit: 3}, "[3 4 5]"},
		{"after the end", store.MessageQuery{AfterSeq: 6}, "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fmt.Sprint(seqs(load(t, s, a.ID, tt.q))); got != tt.want {
				t.Fatalf("seqs = %s, want %s", got, tt.want)
			}
		})
	}
}

// testQuerySpare: Spare leaves room to append that many rows without a
// copy, and changes nothing else.
func testQuerySpare(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	f := store.Fence{SessionID: a.ID}
	for i := range 4 {
		appendMsgs(t, s, f, text(llm.RoleUser, fmt.Sprint("m", i+1)))
	}
	for _, q := range []store.MessageQuery{{Spare: 100}, {AfterSeq: 1, Spare: 7}, {Limit: 2, Spare: 3}} {
		got := load(t, s, a.ID, q)
		plain := q
		plain.Spare = 0
		if want := load(t, s, a.ID, plain); fmt.Sprint(seqs(got)) != fmt.Sprint(seqs(want)) {
			t.Errorf("%+v: seqs = %v, without Spare %v", q, seqs(got), seqs(want))
		}
		if cap(got)-len(got) < q.Spare {
			t.Errorf("%+v: %d rows, capacity %d: want room for %d more", q, len(got), cap(got), q.Spare)
		}
	}
}

func testArchived(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	f := store.Fence{SessionID: a.ID}
	old := text(llm.RoleUser, "old")
	old.Archived = true
	appendMsgs(t, s, f, old, text(llm.RoleUser, "live1"), text(llm.RoleAssistant, "live2"))
	if got := fmt.Sprint(texts(load(t, s, a.ID, store.MessageQuery{}))); got != "[live1 live2]" {
		t.Fatalf("live rows = %s", got)
	}
	all := load(t, s, a.ID, store.MessageQuery{IncludeArchived: true})
	if got := fmt.Sprint(texts(all)); got != "[old live1 live2]" || !all[0].Archived || all[1].Archived {
		t.Fatalf("all rows = %s (archived %v %v)", got, all[0].Archived, all[1].Archived)
	}
	// AfterSeq and Limit apply after the archive filter.
	if got := fmt.Sprint(texts(load(t, s, a.ID, store.MessageQuery{Limit: 1}))); got != "[live1]" {
		t.Fatalf("first live row = %s", got)
	}
}

func testReplace(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	l := acquire(t, s, a.ID, "h")
	f := l.Fence()
	for i := range 5 {
		appendMsgs(t, s, f, text(llm.RoleUser, fmt.Sprint("m", i+1)))
	}
	sum := text(llm.RoleUser, "summary")
	sum.Kind = store.RowSummary
	ack := text(llm.RoleAssistant, "ack")
	if err := s.Replace(ctx(t), f, 3, sum, ack); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	if sum.Seq != 6 || ack.Seq != 7 || sum.SessionID != a.ID || sum.ID == 0 {
		t.Fatalf("Replace assigned seq %d/%d session %q id %d, want 6/7", sum.Seq, ack.Seq, sum.SessionID, sum.ID)
	}
	live := load(t, s, a.ID, store.MessageQuery{})
	if got := fmt.Sprint(texts(live), seqs(live)); got != "[m4 m5 summary ack] [4 5 6 7]" {
		t.Fatalf("live after Replace = %s", got)
	}
	all := load(t, s, a.ID, store.MessageQuery{IncludeArchived: true})
	var archived []int64
	for _, m := range all {
		if m.Archived {
			archived = append(archived, m.Seq)
		}
	}
	if fmt.Sprint(archived) != "[1 2 3]" || len(all) != 7 {
		t.Fatalf("archived seqs = %v of %d rows", archived, len(all))
	}
	// Replace through 0 archives nothing and still appends.
	if err := s.Replace(ctx(t), f, 0, text(llm.RoleUser, "more")); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(seqs(load(t, s, a.ID, store.MessageQuery{}))); got != "[4 5 6 7 8]" {
		t.Fatalf("after Replace(0) live seqs = %s", got)
	}
	// Replace with nothing to append archives everything up to the seq.
	if err := s.Replace(ctx(t), f, 7); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(texts(load(t, s, a.ID, store.MessageQuery{}))); got != "[more]" {
		t.Fatalf("after Replace(7) live = %s", got)
	}
}

func testDelete(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	other := newSession(t, s)
	l := acquire(t, s, a.ID, "h")
	ms := []*store.Message{text(llm.RoleUser, "1"), text(llm.RoleAssistant, "2"), text(llm.RoleUser, "3"),
		text(llm.RoleAssistant, "4")}
	appendMsgs(t, s, l.Fence(), ms...)
	foreign := text(llm.RoleUser, "foreign")
	appendMsgs(t, s, store.Fence{SessionID: other.ID}, foreign)
	// Unknown ids and another session's ids are ignored.
	if err := s.Delete(ctx(t), l.Fence(), ms[1].ID, ms[3].ID, 999999, foreign.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if got := fmt.Sprint(texts(load(t, s, a.ID, store.MessageQuery{IncludeArchived: true}))); got != "[1 3]" {
		t.Fatalf("after Delete = %s", got)
	}
	if got := load(t, s, other.ID, store.MessageQuery{}); len(got) != 1 {
		t.Fatalf("Delete removed another session's row")
	}
	if err := s.Delete(ctx(t), l.Fence()); err != nil {
		t.Fatalf("Delete of nothing: %v", err)
	}
}

func testSeqNeverReused(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	f := store.Fence{SessionID: a.ID}
	m1, m2, m3 := text(llm.RoleUser, "1"), text(llm.RoleAssistant, "2"), text(llm.RoleAssistant, "3")
	appendMsgs(t, s, f, m1, m2, m3)
	// Deleting the newest rows must not free their seqs.
	if err := s.Delete(ctx(t), f, m2.ID, m3.ID); err != nil {
		t.Fatal(err)
	}
	m4 := text(llm.RoleAssistant, "4")
	appendMsgs(t, s, f, m4)
	if m4.Seq != 4 {
		t.Fatalf("after deleting seqs 2-3, next Seq = %d, want 4", m4.Seq)
	}
	if err := s.Delete(ctx(t), f, m4.ID); err != nil {
		t.Fatal(err)
	}
	m5 := text(llm.RoleUser, "5")
	if err := s.Replace(ctx(t), f, 10, m5); err != nil {
		t.Fatal(err)
	}
	if m5.Seq != 5 {
		t.Fatalf("Replace after deleting seq 4: Seq = %d, want 5", m5.Seq)
	}
}

func testEmptySession(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	got, err := s.Messages(ctx(t), a.ID, store.MessageQuery{IncludeArchived: true})
	if err != nil || len(got) != 0 {
		t.Fatalf("Messages of an empty session = %d rows, %v", len(got), err)
	}
}

func testSessionsIsolated(t *testing.T, s store.SessionService) {
	a, b := newSession(t, s), newSession(t, s)
	appendMsgs(t, s, store.Fence{SessionID: a.ID}, text(llm.RoleUser, "a1"))
	appendMsgs(t, s, store.Fence{SessionID: b.ID}, text(llm.RoleUser, "b1"), text(llm.RoleUser, "b2"))
	appendMsgs(t, s, store.Fence{SessionID: a.ID}, text(llm.RoleUser, "a2"))
	ga, gb := load(t, s, a.ID, store.MessageQuery{}), load(t, s, b.ID, store.MessageQuery{})
	if fmt.Sprint(texts(ga), seqs(ga)) != "[a1 a2] [1 2]" || fmt.Sprint(texts(gb), seqs(gb)) != "[b1 b2] [1 2]" {
		t.Fatalf("a = %v %v, b = %v %v", texts(ga), seqs(ga), texts(gb), seqs(gb))
	}
}

// testIDNeverReused deletes the newest row of the whole store (by Delete,
// then with its session) and checks the next row gets a larger id.
func testIDNeverReused(t *testing.T, s store.SessionService) {
	a, b := newSession(t, s), newSession(t, s)
	fa, fb := store.Fence{SessionID: a.ID}, store.Fence{SessionID: b.ID}
	m1, m2 := text(llm.RoleUser, "1"), text(llm.RoleAssistant, "2")
	appendMsgs(t, s, fa, m1, m2)
	if err := s.Delete(ctx(t), fa, m2.ID); err != nil {
		t.Fatal(err)
	}
	m3 := text(llm.RoleUser, "3")
	appendMsgs(t, s, fb, m3)
	if m3.ID <= m2.ID {
		t.Fatalf("after deleting id %d, a new row got id %d", m2.ID, m3.ID)
	}
	if err := s.DeleteSession(ctx(t), b.ID); err != nil {
		t.Fatal(err)
	}
	m4 := text(llm.RoleUser, "4")
	appendMsgs(t, s, fa, m4)
	if m4.ID <= m3.ID {
		t.Fatalf("after deleting the session holding id %d, a new row got id %d", m3.ID, m4.ID)
	}
}

// testAppendMovesSessionUp: a session written to comes first in the
// listing, and its UpdatedAt is not older than the row.
func testAppendMovesSessionUp(t *testing.T, s store.SessionService) {
	a := newSession(t, s)
	b := newSession(t, s, func(x *store.Session) { x.UpdatedAt = a.UpdatedAt.Add(time.Millisecond) })
	if got := listIDs(t, s); len(got) < 2 || got[0] != b.ID {
		t.Fatalf("before the append, list = %v, want %s first", got, b.ID)
	}
	m := text(llm.RoleUser, "hello")
	m.CreatedAt = b.UpdatedAt.Add(time.Second)
	appendMsgs(t, s, store.Fence{SessionID: a.ID}, m)
	if got := listIDs(t, s); len(got) < 2 || got[0] != a.ID {
		t.Fatalf("after the append, list = %v, want %s first", got, a.ID)
	}
	if got := getSession(t, s, a.ID); got.UpdatedAt.Before(b.UpdatedAt) {
		t.Fatalf("UpdatedAt %v after the append is older than the other session's %v", got.UpdatedAt, b.UpdatedAt)
	}
}

func listIDs(t *testing.T, s store.SessionService) []string {
	t.Helper()
	ss, err := s.ListSessions(ctx(t), store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(ss))
	for i, x := range ss {
		ids[i] = x.ID
	}
	return ids
}
