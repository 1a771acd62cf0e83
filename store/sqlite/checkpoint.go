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
// every few hundred commits, which was most of an append's mean time and
// all of its tail. Here the writer connection only falls back to an
// automatic checkpoint when the log is far behind (fallbackCheckpoint), and
// a checkpointer goroutine on a connection of its own runs a PASSIVE
// checkpoint every checkpointEvery commits; PASSIVE never blocks writers or
// readers. Durability is unchanged: a commit is in the log either way.
const (
	checkpointEvery    = 256  // commits between background checkpoints
	fallbackCheckpoint = 8192 // WAL pages (32 MiB) at which a commit checkpoints itself
)

// checkpointer owns the background checkpoint connection.
type checkpointer struct {
	db   *sql.DB
	kick chan struct{} // buffered 1: a request while one runs is kept, not queued
	done chan struct{}
	n    int          // commits since the last kick; guarded by the store's wmu
	runs atomic.Int64 // checkpoints run, for tests
}

// startCheckpointer opens the connection and starts the goroutine;
// stop ends both.
func startCheckpointer(ctx context.Context, dsn string) (*checkpointer, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	c := &checkpointer{db: db, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go c.run()
	return c, nil
}

func (c *checkpointer) run() {
	defer close(c.done)
	for range c.kick {
		// A failure (another process checkpointing, the file going away)
		// leaves the log to the next kick or to the fallback.
		_, _ = c.db.ExecContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`)
		c.runs.Add(1)
	}
}

// committed counts a commit and wakes the goroutine every checkpointEvery.
// Called with the store's wmu held.
func (c *checkpointer) committed() {
	if c == nil {
		return
	}
	if c.n++; c.n < checkpointEvery {
		return
	}
	c.n = 0
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// stop waits for a checkpoint in progress and closes the connection.
func (c *checkpointer) stop() error {
	if c == nil {
		return nil
	}
	close(c.kick)
	<-c.done
	return c.db.Close()
}

// fallbackPragma is run on the writer connection.
var fallbackPragma = fmt.Sprintf(`PRAGMA wal_autocheckpoint = %d`, fallbackCheckpoint)
