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
	path, err := tipPath(ctx, s, start)
	if err != nil {
		return nil, err
	}
	return path[len(path)-1], nil
}

// Lineage is the compression chain through sess, oldest first: the
// sessions it continues, sess itself, and its continuations down to the
// live tip ResolveTip finds — or, when the chain has no live tip, down the
// newest branch to where it ends. A subagent or review session was spawned
// by its parent, not continued from it: the walk up stops there. With an
// error (the store failed, or the walk down found no live tip, wrapping
// ErrEnded) it returns the chain as far as it got.
func Lineage(ctx context.Context, s Sessions, sess *Session) ([]*Session, error) {
	chain := []*Session{sess}
	for cur := sess; cur.ParentID != "" && cur.Kind == "" && len(chain) < maxLineageHops; {
		p, err := s.GetSession(ctx, cur.ParentID)
		if err != nil {
			return chain, fmt.Errorf("lineage of session %s: parent of %s: %w", sess.ID, cur.ID, err)
		}
		chain = append([]*Session{p}, chain...)
		cur = p
	}
	down, err := tipPath(ctx, s, sess)
	return append(chain, down[1:]...), err
}

// tipPath walks from start to its live tip (see ResolveTip) and returns the
// path, start first. Without a live tip it returns the newest branch's
// path, to the session where it ends, and an error wrapping ErrEnded.
func tipPath(ctx context.Context, s Sessions, start *Session) ([]*Session, error) {
	// Depth-first, newest child first; visited guards against cycles, from
	// remembers how the walk reached each session.
	visited := map[string]bool{}
	from := map[string]*Session{}
	pathTo := func(last *Session) []*Session {
		path := []*Session{last}
		for cur := last; cur != start && len(path) <= maxLineageHops; {
			cur = from[cur.ID]
			path = append([]*Session{cur}, path...)
		}
		return path
	}
	stack := []*Session{start}
	var deadEnd []*Session // the first branch that ended: the newest one
	last := start
	for hops := 0; len(stack) > 0; hops++ {
		if err := ctx.Err(); err != nil {
			return []*Session{start}, fmt.Errorf("resolve tip of session %s: %w", start.ID, err)
		}
		if hops >= maxLineageHops {
			return []*Session{start}, fmt.Errorf("resolve tip of session %s: lineage longer than %d hops: %w",
				start.ID, maxLineageHops, ErrEnded)
		}
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		visited[cur.ID] = true
		if cur.Live() {
			return pathTo(cur), nil
		}
		last = cur
		pushed := false
		if cur.EndReason == EndCompression {
			children, err := s.ChildSessions(ctx, cur.ID)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return pathTo(cur), fmt.Errorf("resolve tip of session %s: children of %s: %w", start.ID, cur.ID, err)
			}
			// Children come oldest first; push them so the newest pops first.
			for i := range children {
				c := children[i]
				// Subagent and review children are not continuations.
				if c.Kind == "" && !visited[c.ID] {
					stack = append(stack, &c)
					from[c.ID] = cur
					pushed = true
				}
			}
		}
		if !pushed && deadEnd == nil {
			deadEnd = pathTo(cur) // ended for good on this branch
		}
	}
	reason := last.EndReason
	if reason == "" {
		reason = "unknown reason"
	}
	return deadEnd, fmt.Errorf("resolve tip of session %s: lineage ends in session %s (ended: %s) "+
		"with no live continuation: %w", start.ID, last.ID, reason, ErrEnded)
}
