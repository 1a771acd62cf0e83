package store

import (
	"context"
	"time"
)

// StreamEvent is one event of a session's live stream (the gateway's SSE
// events), kept in the database so every node sharing it can deliver the
// events of a turn running on another node, in order, and resume a stream
// from any event id.
type StreamEvent struct {
	SessionID string
	// ID orders a session's events; assigned by AppendStreamEvent, only
	// grows, and events become visible in ID order.
	ID int64
	// Prev is the id of the session's event before this one (0: none),
	// set by AppendStreamEvent: a node that has delivered Prev can deliver
	// this one without reading the events in between (there are none).
	Prev   int64
	Type   string
	TurnID string
	Data   []byte // the encoded event, stored verbatim
}

// Claim is a queued message a node took to run, with the session's lease
// it took with it.
type Claim struct {
	Message QueuedMessage
	// Lease is the session's turn lease, taken for the claiming holder in
	// the same transaction; the turn re-acquires it under the same holder.
	Lease Lease
	// Orphan says the message had been started by a holder whose lease
	// ended without taking it off the queue: a node that died mid-turn.
	Orphan bool
}

// Cluster is what a store shared by several gateway nodes provides on top
// of Store: claiming queued messages under the session lease, and a
// durable, ordered event stream per session with wake-ups. It is optional:
// a single node (SQLite) keeps its queue and events in memory.
type Cluster interface {
	// ClaimQueued takes the session's lease for holder and, in the same
	// transaction, its oldest queued message. ok is false, with nothing
	// taken, when the queue is empty, another holder's lease is live, or
	// the head was started by a holder that released its lease less than
	// settle ago (it is still taking the message off the queue). A head
	// started under a lease that expired, or was released longer than
	// settle ago, is returned as an Orphan; an unstarted head is marked
	// started.
	ClaimQueued(ctx context.Context, sessionID, holder string, ttl, settle time.Duration) (c Claim, ok bool, err error)
	// ClaimableSessions lists the sessions that have queued messages and
	// no live lease: work a node may pick up (a dead node's included).
	ClaimableSessions(ctx context.Context) ([]string, error)
	// AppendStreamEvent stores ev with the next ID of its session, at
	// least floor, assigns ev.ID and ev.Prev, and wakes WatchStreamEvents
	// everywhere.
	AppendStreamEvent(ctx context.Context, ev *StreamEvent, floor int64) error
	// StreamEvents lists a session's events with ID > after in ID order,
	// at most limit (0: all).
	StreamEvents(ctx context.Context, sessionID string, after int64, limit int) ([]StreamEvent, error)
	// LastStreamEventID is the largest ID given out for the session (0
	// when none).
	LastStreamEventID(ctx context.Context, sessionID string) (int64, error)
	// WatchStreamEvents calls fn with a session id whenever that session
	// gets new events, and with "" once it listens (after a reconnect,
	// events may have been missed). It returns when ctx ends or the
	// connection fails.
	WatchStreamEvents(ctx context.Context, fn func(sessionID string)) error
	// PruneStreamEvents removes events stored before t; a stream resumed
	// from an older id gets the stored rows instead.
	PruneStreamEvents(ctx context.Context, before time.Time) (int64, error)
}
