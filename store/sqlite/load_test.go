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
