package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/internal/pgtest"
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
