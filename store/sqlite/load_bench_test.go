package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/testing/transcriptgen"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/internal/sqlrows"
)

// BenchmarkLoadColumns scans 10,000 rows without decoding them, for
// three column lists: every column (sqlrows.MessageCols), the load
// statement's folded ones (loadCols), and the seven no row can do without,
// the floor of any column list with this driver.
func BenchmarkLoadColumns(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, b.TempDir()+"/state.db", Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateSession(ctx, &store.Session{ID: "big"}); err != nil {
		b.Fatal(err)
	}
	const n = 10_000
	batch := make([]*store.Message, 0, 500)
	for i := range n {
		batch = append(batch, transcriptgen.Row(i))
		if len(batch) == cap(batch) {
			if err := s.Append(ctx, store.Fence{SessionID: "big"}, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	for _, v := range []struct{ name, cols string }{
		{"all", sqlrows.MessageCols},
		{"folded", loadCols},
		{"seven", `id, seq, role, text, content, tool_calls, created_at`},
	} {
		b.Run(v.name, func(b *testing.B) {
			st, err := s.r.PrepareContext(ctx, `SELECT `+v.cols+` FROM messages WHERE session_id = ? ORDER BY seq`)
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			start := cpuNow()
			for b.Loop() {
				if got := scanRaw(b, st); got != n {
					b.Fatalf("scanned %d rows", got)
				}
			}
			b.ReportMetric(float64(cpuNow()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

// scanRaw scans every row of st's result into reused sql.RawBytes.
func scanRaw(b *testing.B, st *sql.Stmt) int {
	rows, err := st.QueryContext(context.Background(), "big")
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		b.Fatal(err)
	}
	raw := make([]sql.RawBytes, len(cols))
	dest := make([]any, len(cols))
	for i := range dest {
		dest[i] = &raw[i]
	}
	n := 0
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			b.Fatal(fmt.Errorf("row %d: %w", n, err))
		}
		n++
	}
	return n
}

// cpuNow is this process's user+system CPU time: steadier than wall time
// on a shared machine.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
