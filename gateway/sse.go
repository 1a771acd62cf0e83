package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/talaria-agent/talaria/api"
	"github.com/talaria-agent/talaria/internal/apiview"
	"github.com/talaria-agent/talaria/store"
)

// streamOptions narrow an SSE stream.
type streamOptions struct {
	after int64 // resume after this event id
	// turnID, when set, keeps only that turn's events and ends the stream
	// after its turn_finished.
	turnID string
}

// lastEventID reads where a client resumes: the Last-Event-ID header (sent
// by EventSource on reconnect), else ?after=.
func lastEventID(r *http.Request) (int64, error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, errf(http.StatusBadRequest, api.CodeBadRequest, "Last-Event-ID/after must be an event id")
	}
	return n, nil
}

// sseWriter writes events and flushes.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.Flush()
	return s
}

func (s *sseWriter) event(ev Event) error {
	_, err := fmt.Fprintf(s.w, "id: %d\nevent: %s\ndata: %s\n\n", ev.ID, ev.Type, ev.Data)
	return err
}

func (s *sseWriter) comment(c string) error {
	if _, err := fmt.Fprintf(s.w, ": %s\n\n", c); err != nil {
		return err
	}
	return s.flush()
}

func (s *sseWriter) flush() error { return s.rc.Flush() }

// stream serves a session's events after opt.after: stored rows the ring
// no longer holds (from the database), then the ring's backlog, then live
// events — each id at most once, in order. It returns when the client goes,
// the subscriber is dropped for falling behind, the server shuts down, or
// (with opt.turnID) that turn has finished.
func (g *Gateway) stream(ctx context.Context, w http.ResponseWriter, sessionID string, opt streamOptions, sub *subscriber, h *hub, bl backlog) {
	defer h.unsubscribe(sub)
	g.m.streams(1)
	defer g.m.streams(-1)
	sw := startSSE(w)
	last := opt.after
	finished := false
	send := func(ev Event) bool {
		if ev.ID <= last {
			return true
		}
		if opt.turnID != "" && ev.TurnID != opt.turnID {
			return true
		}
		last = ev.ID
		if err := sw.event(ev); err != nil {
			return false
		}
		if opt.turnID != "" && ev.Type == api.EventTurnFinished {
			finished = true
		}
		return true
	}
	events := bl.events
	if !bl.covered {
		// The ring lost some of (after, upto]: merge the stored rows of that
		// range with what the ring still has, in id order. Rows committed
		// after upto arrive as live events.
		rows, err := g.store.Messages(ctx, sessionID, store.MessageQuery{AfterSeq: opt.after >> seqShift})
		if err != nil {
			_ = sw.comment("error reading stored events: " + strings.ReplaceAll(err.Error(), "\n", " "))
			return
		}
		var stored []Event
		for i := range rows {
			m := &rows[i]
			id := m.Seq << seqShift
			if !shown(m) || id <= opt.after || id > bl.upto {
				continue
			}
			stored = append(stored, Event{ID: id, Type: api.EventMessage, TurnID: m.TurnID,
				Data: encode(api.EventMessage, m.TurnID, map[string]any{"message": apiview.Message(m)})})
		}
		if g.cluster != nil {
			// A cluster also keeps the live events (deltas, tool and turn
			// events) of every node.
			kept, err := g.cluster.StreamEvents(ctx, sessionID, opt.after, 0)
			if err != nil {
				_ = sw.comment("error reading stored events: " + strings.ReplaceAll(err.Error(), "\n", " "))
				return
			}
			var live []Event
			for _, e := range kept {
				if e.ID <= bl.upto {
					live = append(live, Event{ID: e.ID, Type: EventType(e.Type), TurnID: e.TurnID, Data: e.Data})
				}
			}
			stored = mergeEvents(stored, live)
		}
		events = mergeEvents(stored, bl.events)
	}
	if g.relay != nil {
		g.relay.kick(sessionID) // catch this node's hub up now
	}
	for _, ev := range events {
		if !send(ev) {
			return
		}
	}
	if sw.flush() != nil || finished {
		return
	}
	// sendBuffered sends every event already waiting; false when the
	// client went away.
	sendBuffered := func() bool {
		for {
			select {
			case ev := <-sub.ch:
				if !send(ev) {
					return false
				}
			default:
				return true
			}
		}
	}
	beat := time.NewTicker(g.cfg.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.closing:
			// Shutdown: deliver what is buffered (turn_finished of the
			// drained turns) and end.
			if sendBuffered() {
				_ = sw.flush()
			}
			return
		case <-sub.dropped:
			// Fell too far behind. Send what is buffered, then end: the
			// client resumes from the last id it got.
			if sendBuffered() {
				_ = sw.comment("dropped: too slow; reconnect with Last-Event-ID")
			}
			return
		case <-beat.C:
			if !g.tokenValid(ctx) {
				_ = sw.comment("token revoked")
				return
			}
			if sw.comment("ping") != nil {
				return
			}
		case ev := <-sub.ch:
			if !send(ev) {
				return
			}
			// Drain what else is ready before one flush.
		drain:
			for range 64 {
				select {
				case ev := <-sub.ch:
					if !send(ev) {
						return
					}
				default:
					break drain
				}
			}
			if sw.flush() != nil || finished {
				return
			}
		}
	}
}

// mergeEvents merges two id-ordered lists; an id in both is kept once.
func mergeEvents(a, b []Event) []Event {
	out := make([]Event, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		switch {
		case a[0].ID < b[0].ID:
			out, a = append(out, a[0]), a[1:]
		case a[0].ID > b[0].ID:
			out, b = append(out, b[0]), b[1:]
		default:
			out, a, b = append(out, b[0]), a[1:], b[1:]
		}
	}
	return append(append(out, a...), b...)
}
