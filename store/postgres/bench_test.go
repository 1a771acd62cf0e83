package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/testing/pgtest"
	"github.com/talaria-agent/talaria/internal/testing/transcriptgen"
	"github.com/talaria-agent/talaria/store"
)

// BenchmarkLeaseRefresh10k measures what keeping 10,000 turns alive costs
// the database: 10,000 sessions each hold a lease, and the benchmark
// refreshes them round-robin from 16 goroutines (as many nodes' refreshers
// would). It reports refreshes/s the server sustains and transactions per
// refresh (from pg_stat_database); the load a deployment puts on the
// database is sessions / LeaseRefresh (10,000 / 60 s ≈ 167 refreshes/s by
// default).
func BenchmarkLeaseRefresh10k(b *testing.B) {
	const sessions = 10000
	dsn := pgtest.New(b)
	s := openAt(b, dsn)
	ctx := context.Background()
	leases := make([]store.Lease, sessions)
	var wg sync.WaitGroup
	var failed atomic.Value
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < sessions; i += 16 {
				sess := &store.Session{ID: fmt.Sprintf("s%05d", i)}
				if err := s.CreateSession(ctx, sess); err != nil {
					failed.Store(err)
					return
				}
				l, err := s.AcquireLease(ctx, sess.ID, fmt.Sprint("node-", w%3), 5*time.Minute)
				if err != nil {
					failed.Store(err)
					return
				}
				leases[i] = l
			}
		})
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // let the setup's statistics arrive first
	before := xactCommits(b, dsn)
	var next atomic.Int64
	b.SetParallelism(8) // 8 refreshers per GOMAXPROCS
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1) % sessions
			l, err := s.RefreshLease(ctx, leases[i], 5*time.Minute)
			if err != nil {
				b.Error(err)
				return
			}
			_ = l
		}
	})
	b.StopTimer()
	// Statistics reach pg_stat_database within the stats interval.
	time.Sleep(1100 * time.Millisecond)
	after := xactCommits(b, dsn)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "refreshes/s")
	b.ReportMetric(float64(after-before-2)/float64(b.N), "xacts/refresh")
}

// BenchmarkTurnWrites makes the writes of one ten-round tool turn per op
// (transcriptgen.WriteTurn): "separate" as before issue 18's folding (the
// lease, the user's message, each call's cost and the release each a
// write: 35), "folded" as the engine writes now (23). It reports the
// server's write transactions per turn: transaction ids assigned
// (pg_current_xact_id), which every transaction that writes takes, counted
// by the server itself, not by the client.
func BenchmarkTurnWrites(b *testing.B) {
	for _, folded := range []bool{false, true} {
		name := map[bool]string{false: "separate", true: "folded"}[folded]
		b.Run(name, func(b *testing.B) {
			dsn := pgtest.New(b)
			s := openAt(b, dsn)
			ctx := context.Background()
			if err := s.CreateSession(ctx, &store.Session{ID: "a"}); err != nil {
				b.Fatal(err)
			}
			before := xactID(b, dsn)
			writes := 0
			b.ResetTimer()
			for range b.N {
				n, err := transcriptgen.WriteTurn(ctx, s, "a", 10, folded)
				if err != nil {
					b.Fatal(err)
				}
				writes += n
			}
			b.StopTimer()
			after := xactID(b, dsn)
			b.ReportMetric(float64(writes)/float64(b.N), "writes/turn")
			b.ReportMetric(float64(after-before-1)/float64(b.N), "xacts/turn") // less the first probe's own
		})
	}
}

// xactID assigns and returns a new transaction id: the count of write
// transactions the server has started.
func xactID(b *testing.B, dsn string) int64 {
	return serverCount(b, dsn, `SELECT pg_current_xact_id()::text::bigint`)
}
