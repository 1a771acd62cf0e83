package store

import (
	"context"
	"errors"
	"fmt"
)

// maxLineageHops bounds the lineage walk so a corrupted parent/child cycle
// cannot hang a turn.
const maxLineageHops = 1000

// ResolveTip follows a session's compression lineage (children whose parent
// ended with EndCompression) to its live tip, over any number of hops
// (bounded, to survive cycles), and returns it. A live session is its own
// tip.
//
// When a session has several continuations (a rotation that was retried),
// the newest one is tried first and the walk backtracks into older ones, so
// a stale ended branch does not hide a live one.
//
// It fails closed with an error wrapping ErrEnded when every path ends in an
// ended session with no live continuation, and with an error wrapping
// ErrNotFound for an unknown id.
func ResolveTip(ctx context.Context, s Sessions, id string) (*Session, error) {
	start, err := s.GetSession(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("resolve tip of session %s: %w", id, err)
	}

	// Depth-first, newest child first; visited guards against cycles.
	visited := map[string]bool{}
	stack := []*Session{start}
	last := start
	for hops := 0; len(stack) > 0; hops++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("resolve tip of session %s: %w", id, err)
		}
		if hops >= maxLineageHops {
			return nil, fmt.Errorf("resolve tip of session %s: lineage longer than %d hops: %w",
				id, maxLineageHops, ErrEnded)
		}
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		visited[cur.ID] = true
		if cur.Live() {
			return cur, nil
		}
		last = cur
		if cur.EndReason != EndCompression {
			continue // ended for good on this branch
		}
		children, err := s.ChildSessions(ctx, cur.ID)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("resolve tip of session %s: children of %s: %w", id, cur.ID, err)
		}
		// Children come oldest first; push them so the newest pops first.
		for i := range children {
			c := children[i]
			// Subagent and review children are not continuations.
			if c.Kind == "" && !visited[c.ID] {
				stack = append(stack, &c)
			}
		}
	}
	reason := last.EndReason
	if reason == "" {
		reason = "unknown reason"
	}
	return nil, fmt.Errorf("resolve tip of session %s: lineage ends in session %s (ended: %s) "+
		"with no live continuation: %w", id, last.ID, reason, ErrEnded)
}
