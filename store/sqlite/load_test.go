package sqlite

import (
	"context"
	"database/sql"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// TestLoadColsMatchFullColumns holds the load statement's folded columns
// (loadCols, loadRow) to the plain column list both backends share
// (sqlrows.MessageCols, MessageRow): rows with every field set, unset and
// in between, edge values included, read back both ways.
func TestLoadColsMatchFullColumns(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	const id = "fold"
	if err := s.CreateSession(ctx, &store.Session{ID: id}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 18))
	pick := func(vals ...string) string { return vals[rng.IntN(len(vals))] }
	num := func() int64 {
		return []int64{0, 0, 1, 12000, -3, math.MaxInt64, math.MinInt64}[rng.IntN(7)]
	}
	var msgs []*store.Message
	for i := range 400 {
		m := &store.Message{
			TurnID: pick("", "t1", "turn-é"),
			Message: llm.Message{
				Role:       llm.Role(pick("user", "assistant", "tool", "system")),
				ToolCallID: pick("", "call_1", " spaced "),
				ToolName:   pick("", "read_file"),
				IsError:    rng.IntN(2) == 0,
			},
			APIContent:   pick("", "placeholder", "0"),
			Kind:         store.RowKind(pick("", "summary", "notice")),
			Synthetic:    rng.IntN(2) == 0,
			FinishReason: llm.FinishReason(pick("", "stop", "tool_calls")),
			Usage: llm.Usage{InputTokens: num(), OutputTokens: num(), CacheReadTokens: num(),
				CacheWriteTokens: num(), ReasoningTokens: num(), Reported: rng.IntN(2) == 0},
			Provider: pick("", "openai", "a b"),
			Model:    pick("", "gpt", "x\ty"),
		}
		switch rng.IntN(4) {
		case 0:
			m.Content = []llm.Part{llm.TextPart(pick("hi", "a\x00b", "0"))}
		case 1:
			m.Content = []llm.Part{llm.TextPart("a"), {Type: llm.PartImage, URL: "u"}}
		case 2:
			m.ToolCalls = []llm.ToolCall{{ID: "c", Name: "f", Arguments: `{"x":1}`}}
		}
		if rng.IntN(3) == 0 {
			m.Reasoning = &llm.Reasoning{Text: "think", Signature: "sig"}
		}
		if i%50 == 0 { // a row with nothing set at all
			m = &store.Message{Message: llm.Message{Role: llm.RoleUser}}
		}
		msgs = append(msgs, m)
	}
	l, err := s.AcquireLease(ctx, id, "test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, l.Fence(), msgs[:200]...); err != nil {
		t.Fatal(err)
	}
	if err := s.Replace(ctx, l.Fence(), 150, msgs[200:]...); err != nil { // archives 1..150
		t.Fatal(err)
	}
	for _, archived := range []bool{false, true} {
		got, err := s.Messages(ctx, id, store.MessageQuery{IncludeArchived: archived})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := s.r.QueryContext(ctx, `SELECT `+sqlrows.MessageCols+` FROM messages
			WHERE session_id = ? AND (? OR archived = 0) ORDER BY seq`, id, archived)
		if err != nil {
			t.Fatal(err)
		}
		var want []store.Message
		var raw sqlrows.MessageRow[sql.RawBytes, string]
		for rows.Next() {
			want = append(want, store.Message{SessionID: id})
			if err := raw.Scan(rows, &want[len(want)-1]); err != nil {
				t.Fatal(err)
			}
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || len(got) < 250 {
			t.Fatalf("archived %v: loaded %d rows, the full columns %d", archived, len(got), len(want))
		}
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("archived %v: row %d\n got %#v\nwant %#v", archived, i, got[i], want[i])
			}
		}
	}
}

func TestParseUsageRejectsMalformed(t *testing.T) {
	for _, v := range []any{int64(3), "1 2 3", "1 2 3 4 5 6 7", "1 2 x 4 5 6"} {
		if _, err := parseUsage(v); err == nil {
			t.Errorf("parseUsage(%#v) succeeded", v)
		}
	}
}

// openStore opens a store in a temporary directory for one test.
func openStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// bigSession writes n rows into a new session and returns its lease.
func bigSession(t *testing.T, s *Store, id string, n int) store.Lease {
	t.Helper()
	ctx := context.Background()
	if err := s.CreateSession(ctx, &store.Session{ID: id}); err != nil {
		t.Fatal(err)
	}
	l, err := s.AcquireLease(ctx, id, "test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var batch []*store.Message
	for i := range n {
		batch = append(batch, &store.Message{TurnID: "t", Message: llm.NewText(llm.RoleUser, "row")})
		if len(batch) == 500 || i == n-1 {
			if err := s.Append(ctx, l.Fence(), batch...); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return l
}

// TestSplitLoadMatchesOneStatement: a history long enough to be read in
// two halves reads the same as in one statement, archived rows in or out.
func TestSplitLoadMatchesOneStatement(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	l := bigSession(t, s, "big", splitLoadRows+1001)
	if err := s.Replace(ctx, l.Fence(), 700, &store.Message{Message: llm.NewText(llm.RoleUser, "summary")}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []store.MessageQuery{{}, {IncludeArchived: true}, {AfterSeq: 3}, {AfterSeq: 3, IncludeArchived: true}} {
		var last int64
		if err := s.r.QueryRowContext(ctx, lastSeqSQL, "big").Scan(&last); err != nil {
			t.Fatal(err)
		}
		split, ok, err := s.loadSplit(ctx, "big", q, last)
		if err != nil || !ok {
			t.Fatalf("%+v: loadSplit: ok %v, %v", q, ok, err)
		}
		whole, err := s.loadMessages(ctx, s.st.load, "big", q, -1, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Messages(ctx, "big", q)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(split, whole) || !reflect.DeepEqual(got, whole) {
			t.Fatalf("%+v: split %d rows, Messages %d, one statement %d: not the same", q, len(split), len(got), len(whole))
		}
	}
}

// TestSplitLoadNoticesACommit: a commit by another connection while the
// halves are read (here: before either starts, so the test does not
// depend on timing) makes loadSplit give up, and Messages reads the rows
// in one statement instead; with no commit the halves stand.
func TestSplitLoadNoticesACommit(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	l := bigSession(t, s, "busy", splitLoadRows+1000)
	var last int64
	if err := s.r.QueryRowContext(ctx, lastSeqSQL, "busy").Scan(&last); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.loadSplit(ctx, "busy", store.MessageQuery{}, last); err != nil || !ok {
		t.Fatalf("quiet database: loadSplit ok %v, %v", ok, err)
	}
	// Archive the first 3,000 rows between the two data_version reads: the
	// halves could each have seen a different side of it.
	s.splitHook = func() {
		s.splitHook = nil
		if err := s.Replace(ctx, l.Fence(), 3000, &store.Message{Message: llm.NewText(llm.RoleUser, "summary")}); err != nil {
			t.Error(err)
		}
	}
	if _, ok, err := s.loadSplit(ctx, "busy", store.MessageQuery{}, last); err != nil || ok {
		t.Fatalf("a commit during the load went unnoticed: ok %v, %v", ok, err)
	}
	s.splitHook = func() {
		s.splitHook = nil
		if err := s.Append(ctx, l.Fence(), &store.Message{Message: llm.NewText(llm.RoleUser, "more")}); err != nil {
			t.Error(err)
		}
	}
	rows, err := s.Messages(ctx, "busy", store.MessageQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != splitLoadRows+1000-3000+2 || rows[0].Seq != 3001 {
		t.Fatalf("after the fallback: %d rows from seq %d", len(rows), rows[0].Seq)
	}
}

// TestSplitLoadSeesOneSnapshot reads a long history while a writer keeps
// archiving all but its newest rows and appending: every read must be one
// snapshot, whose live rows have consecutive seqs. Halves from two
// snapshots astride an archiving show a gap.
func TestSplitLoadSeesOneSnapshot(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	l := bigSession(t, s, "busy", splitLoadRows+1000)
	stop := make(chan struct{})
	writerDone := make(chan error, 1)
	go func() {
		var err error
		defer func() { writerDone <- err }()
		for seq := int64(splitLoadRows + 1000); ; {
			select {
			case <-stop:
				return
			default:
			}
			// Archive all but the newest 10 rows, then add 20.
			if err = s.Replace(ctx, l.Fence(), seq-10, &store.Message{Message: llm.NewText(llm.RoleUser, "summary")}); err != nil {
				return
			}
			batch := make([]*store.Message, 20)
			for i := range batch {
				batch[i] = &store.Message{Message: llm.NewText(llm.RoleUser, "more")}
			}
			if err = s.Append(ctx, l.Fence(), batch...); err != nil {
				return
			}
			seq += 21
		}
	}()
	for range 10 {
		rows, err := s.Messages(ctx, "busy", store.MessageQuery{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(rows); i++ {
			if rows[i].Seq != rows[i-1].Seq+1 || rows[i].Archived {
				t.Fatalf("rows %d and %d of %d: seq %d then %d (archived %v): not one snapshot",
					i-1, i, len(rows), rows[i-1].Seq, rows[i].Seq, rows[i].Archived)
			}
		}
	}
	close(stop)
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
}
