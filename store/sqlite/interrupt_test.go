package sqlite

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// TestFTSQueryInterruptedByContext: a full-text query that would never end
// stops when its context ends (the driver calls sqlite3_interrupt), with
// the context's error, and the connection it ran on answers the next
// query. A search whose client left cannot keep a reader busy.
func TestFTSQueryInterruptedByContext(t *testing.T) {
	s := openInternal(t, Options{})
	ctx := t.Context()
	if err := s.CreateSession(ctx, &store.Session{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	var rows []*store.Message
	for i := range 200 {
		rows = append(rows, &store.Message{Message: llm.NewText(llm.RoleUser, fmt.Sprintf("quince number %d", i))})
	}
	if err := s.Append(ctx, store.Fence{SessionID: "a"}, rows...); err != nil {
		t.Fatal(err)
	}
	if err := s.catchUpIndex(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := s.r.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// An unbounded counter joined with the matches and their snippets:
	// without an interrupt this runs forever.
	const endless = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c)
		SELECT count(*) FROM c, messages_fts WHERE messages_fts MATCH 'quince' AND length(snippet(messages_fts, 0, '[', ']', '…', 8)) > 0`
	qctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var n int64
		done <- conn.QueryRowContext(qctx, endless).Scan(&n)
	}()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the query ran on a minute after its context ended: not interrupted")
	}
	if err == nil {
		t.Fatal("the endless query returned without an error")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the interrupted query's error %v is not the context's", err)
	}
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'quince'`).Scan(&n); err != nil || n != 200 {
		t.Fatalf("after the interrupt the connection answered %d, %v; want 200", n, err)
	}
}
