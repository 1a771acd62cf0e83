package sqlite_test

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/testing/transcriptgen"
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
	"github.com/talaria-agent/talaria/store/sqlite"
)

// transcriptRow returns a realistic row of a tool-using session: user
// prompts, assistant tool calls, tool results and answers.
func transcriptRow(i int) *store.Message { return transcriptgen.Row(i) }

// cpuTime is this process's user+system CPU time. The machine is shared, so
// the benchmarks also report CPU per op, which other load disturbs less
// than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds a cpu-ns/op metric for the loop that began at start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

func BenchmarkLoad10k(b *testing.B) {
	s := openTemp(b, sqlite.Options{})
	ctx := b.Context()
	if err := s.CreateSession(ctx, &store.Session{ID: "big"}); err != nil {
		b.Fatal(err)
	}
	const n = 10_000
	batch := make([]*store.Message, 0, 500)
	for i := range n {
		batch = append(batch, transcriptRow(i))
		if len(batch) == cap(batch) {
			if err := s.Append(ctx, store.Fence{SessionID: "big"}, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		got, err := s.Messages(ctx, "big", store.MessageQuery{})
		if err != nil || len(got) != n {
			b.Fatalf("loaded %d rows: %v", len(got), err)
		}
	}
	reportCPU(b, start)
}

// BenchmarkAppend appends one row with a fence check per op. The "prompt"
// case has a 30 KiB system prompt in the session row, which every append
// updates (seq, updated_at): it shows the big row is not rewritten.
func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct {
		name, sync string
		prompt     int
	}{
		{"synchronous=normal", sqlite.SyncNormal, 0},
		{"synchronous=full", sqlite.SyncFull, 0},
		{"synchronous=normal/prompt=30KiB", sqlite.SyncNormal, 30 << 10},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := openTemp(b, sqlite.Options{Synchronous: bc.sync})
			ctx := b.Context()
			sess := &store.Session{ID: "a", SystemPrompt: strings.Repeat("You are a careful agent. ", bc.prompt/25)}
			if err := s.CreateSession(ctx, sess); err != nil {
				b.Fatal(err)
			}
			l, err := s.AcquireLease(ctx, "a", "bench", time.Hour)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			start := cpuTime()
			for b.Loop() {
				if err := s.Append(ctx, l.Fence(), transcriptRow(i)); err != nil {
					b.Fatal(err)
				}
				i++
			}
			reportCPU(b, start)
		})
	}
}

// BenchmarkAppendLatency times each fenced one-row Append and reports the
// median and 99th percentile (the issue 18 target is the median).
func BenchmarkAppendLatency(b *testing.B) {
	s := openTemp(b, sqlite.Options{})
	ctx := b.Context()
	if err := s.CreateSession(ctx, &store.Session{ID: "a"}); err != nil {
		b.Fatal(err)
	}
	l, err := s.AcquireLease(ctx, "a", "bench", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	i := 0
	start := cpuTime()
	for b.Loop() {
		t := time.Now()
		if err := s.Append(ctx, l.Fence(), transcriptRow(i)); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
		i++
	}
	reportCPU(b, start)
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2]), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ns")
}

// BenchmarkWriterCeiling runs 1, 10 and 100 writers, each appending to its
// own session under its own lease (a gateway's concurrent turns), and
// reports the commits per second the one writer connection sustains.
func BenchmarkWriterCeiling(b *testing.B) {
	for _, writers := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := openTemp(b, sqlite.Options{})
			ctx := b.Context()
			fences := make([]store.Fence, writers)
			for w := range fences {
				id := fmt.Sprint("w", w)
				if err := s.CreateSession(ctx, &store.Session{ID: id}); err != nil {
					b.Fatal(err)
				}
				l, err := s.AcquireLease(ctx, id, "bench", time.Hour)
				if err != nil {
					b.Fatal(err)
				}
				fences[w] = l.Fence()
			}
			var next atomic.Int64
			b.ResetTimer()
			t := time.Now()
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						if err := s.Append(ctx, fences[w], transcriptRow(int(i))); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(t).Seconds(), "commits/s")
		})
	}
}

// BenchmarkSearch50k searches 50,000 generated transcript rows (50
// sessions) for a common word ("the", in half the rows) and a rare one.
// "snippet-every-match" is the query Search ran before issue 18 (a snippet
// made for every match, then sorted), kept here for comparison in the
// same run.
func BenchmarkSearch50k(b *testing.B) {
	s := openTemp(b, sqlite.Options{})
	ctx := b.Context()
	batch := make([]*store.Message, 0, 500)
	for i := range 50_000 {
		if i%1000 == 0 {
			if err := s.CreateSession(ctx, &store.Session{ID: fmt.Sprint("s", i/1000)}); err != nil {
				b.Fatal(err)
			}
		}
		m := transcriptRow(i)
		if i%1000 == 0 {
			m.Content = []llm.Part{llm.TextPart(m.Text() + " Also peel the kumquat.")}
		}
		batch = append(batch, m)
		if len(batch) == cap(batch) {
			if err := s.Append(ctx, store.Fence{SessionID: fmt.Sprint("s", i/1000)}, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if _, err := s.Search(ctx, "warm", store.SearchOptions{}); err != nil { // indexes the backlog
		b.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+s.Path()+"?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for _, word := range []string{"the", "kumquat"} {
		b.Run("word="+word+"/search", func(b *testing.B) {
			start := cpuTime()
			for b.Loop() {
				hits, err := s.Search(ctx, word, store.SearchOptions{})
				if err != nil || len(hits) != 20 {
					b.Fatalf("%d hits: %v", len(hits), err)
				}
			}
			reportCPU(b, start)
		})
		b.Run("word="+word+"/session", func(b *testing.B) {
			start := cpuTime()
			for b.Loop() {
				if _, err := s.Search(ctx, word, store.SearchOptions{SessionID: "s3"}); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, start)
		})
		b.Run("word="+word+"/snippet-every-match", func(b *testing.B) {
			start := cpuTime()
			for b.Loop() {
				rows, err := db.QueryContext(ctx, `SELECT m.session_id, m.id, m.seq, m.role,
					snippet(messages_fts, 0, '«', '»', '…', 16), m.created_at
					FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
					WHERE messages_fts MATCH ? ORDER BY m.created_at DESC, m.id DESC LIMIT 20`, `"`+word+`"`)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for rows.Next() {
					n++
				}
				rows.Close()
				if n != 20 {
					b.Fatalf("%d rows", n)
				}
			}
			reportCPU(b, start)
		})
	}
}

// BenchmarkTurnWrites makes the writes of one ten-round tool turn per op
// (transcriptgen.WriteTurn): "separate" as before issue 18's folding (the
// lease, the user's message, each call's cost and the release each a
// commit: 35), "folded" as the engine writes now (23).
func BenchmarkTurnWrites(b *testing.B) {
	for _, folded := range []bool{false, true} {
		name := map[bool]string{false: "separate", true: "folded"}[folded]
		b.Run(name, func(b *testing.B) {
			s := openTemp(b, sqlite.Options{})
			ctx := b.Context()
			if err := s.CreateSession(ctx, &store.Session{ID: "a"}); err != nil {
				b.Fatal(err)
			}
			writes := 0
			start := cpuTime()
			for b.Loop() {
				n, err := transcriptgen.WriteTurn(ctx, s, "a", 10, folded)
				if err != nil {
					b.Fatal(err)
				}
				writes += n
			}
			reportCPU(b, start)
			b.ReportMetric(float64(writes)/float64(b.N), "commits/turn")
		})
	}
}
