package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
)

// WAL checkpoints run beside the writer, not inside a commit. SQLite's
// automatic checkpoint runs in whichever commit crosses the threshold and
// makes that append wait for copying the log into the database and for two
// fsyncs (the only ones under synchronous=NORMAL): a few milliseconds,
// every few hundred commits, the tail of an append's latency (p99 5.3 ms
// before, 1.1 ms after; BENCHMARKS.md §7). Here the writer connection only falls back to an
// automatic checkpoint when the log is far behind (fallbackCheckpoint), and
// a checkpointer goroutine on a connection of its own runs a PASSIVE
// checkpoint every checkpointEvery commits; PASSIVE never blocks writers or
// readers. Durability is unchanged: a commit is in the log either way.
const (
	checkpointEvery    = 256  // commits between background checkpoints
	fallbackCheckpoint = 8192 // WAL pages (32 MiB) at which a commit checkpoints itself
)

// checkpointer owns the background checkpoint connection. It starts with
// the first checkpoint it is asked for, so a short-lived process (a CLI
// command that writes a row or two) never opens it.
type checkpointer struct {
	dsn     string
	kick    chan struct{} // buffered 1: a request while one runs is kept, not queued
	done    chan struct{}
	n       int          // commits since the last kick; guarded by the store's wmu
	started bool         // guarded by the store's wmu
	runs    atomic.Int64 // checkpoints run, for tests
}

func newCheckpointer(dsn string) *checkpointer {
	return &checkpointer{dsn: dsn, kick: make(chan struct{}, 1), done: make(chan struct{})}
}

func (c *checkpointer) run() {
	defer close(c.done)
	db, err := sql.Open("sqlite", c.dsn)
	if err == nil {
		defer db.Close()
		db.SetMaxOpenConns(1)
	}
	for range c.kick {
		// A failure (another process checkpointing, the file going away)
		// leaves the log to the next kick or to the writer's fallback.
		if err == nil {
			_, _ = db.ExecContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`)
		}
		c.runs.Add(1)
	}
}

// committed counts a commit and wakes the goroutine every checkpointEvery,
// starting it the first time. Called with the store's wmu held.
func (c *checkpointer) committed() {
	if c == nil {
		return
	}
	if c.n++; c.n < checkpointEvery {
		return
	}
	c.n = 0
	if !c.started {
		c.started = true
		go c.run()
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// stop waits for a checkpoint in progress and ends the goroutine. Called
// by Close once no write can start.
func (c *checkpointer) stop() {
	if c == nil || !c.started {
		return
	}
	close(c.kick)
	<-c.done
}

// fallbackPragma is run on the writer connection.
var fallbackPragma = fmt.Sprintf(`PRAGMA wal_autocheckpoint = %d`, fallbackCheckpoint)
