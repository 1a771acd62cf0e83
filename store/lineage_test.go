package store_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// memSessions is a minimal in-memory store.Sessions for lineage tests.
type memSessions struct {
	rows  map[string]store.Session
	calls int // ChildSessions calls, to show the walk stays bounded
}

func newMem(sessions ...store.Session) *memSessions {
	m := &memSessions{rows: map[string]store.Session{}}
	for i, s := range sessions {
		if s.StartedAt.IsZero() {
			s.StartedAt = time.Unix(int64(i), 0)
		}
		m.rows[s.ID] = s
	}
	return m
}

func (m *memSessions) CreateSession(_ context.Context, s *store.Session) error {
	m.rows[s.ID] = *s
	return nil
}

func (m *memSessions) GetSession(_ context.Context, id string) (*store.Session, error) {
	s, ok := m.rows[id]
	if !ok {
		return nil, &store.Error{Op: "get session", Kind: store.KindNotFound, Err: errors.New(id)}
	}
	return &s, nil
}

func (m *memSessions) ListSessions(context.Context, store.ListOptions) ([]store.Session, error) {
	return nil, errors.New("not used")
}

func (m *memSessions) ChildSessions(_ context.Context, id string) ([]store.Session, error) {
	m.calls++
	var out []store.Session
	for _, s := range m.rows {
		if s.ParentID == id {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.Before(out[j].StartedAt) })
	return out, nil
}

func (m *memSessions) SetTitle(context.Context, string, string) error { return errors.New("not used") }
func (m *memSessions) EndSession(context.Context, string, string) error {
	return errors.New("not used")
}
func (m *memSessions) DeleteSession(context.Context, string) error { return errors.New("not used") }
func (m *memSessions) AddUsage(context.Context, string, llm.Usage, float64, int64) error {
	return errors.New("not used")
}

var ended = time.Unix(1000, 0)

// rotated returns a session that ended by compression rotation.
func rotated(id, parent string) store.Session {
	return store.Session{ID: id, ParentID: parent, EndReason: store.EndCompression, EndedAt: ended}
}

// live returns a session that has not ended.
func live(id, parent string) store.Session { return store.Session{ID: id, ParentID: parent} }

func TestResolveTip(t *testing.T) {
	tests := []struct {
		name     string
		sessions []store.Session
		from     string
		want     string // tip id; "" when an error is expected
		wantErr  error
	}{
		{"live session is its own tip", []store.Session{live("a", "")}, "a", "a", nil},
		{"three hops", []store.Session{rotated("root", ""), rotated("mid1", "root"), rotated("mid2", "mid1"),
			live("tip", "mid2")}, "root", "tip", nil},
		{"from the middle", []store.Session{rotated("root", ""), rotated("mid", "root"), live("tip", "mid")},
			"mid", "tip", nil},
		{"tip ended by the user fails closed", []store.Session{rotated("root", ""), rotated("mid", "root"),
			{ID: "tip", ParentID: "mid", EndReason: store.EndUser, EndedAt: ended}}, "root", "", store.ErrEnded},
		{"rotated but no child fails closed", []store.Session{rotated("root", ""), rotated("mid", "root")},
			"root", "", store.ErrEnded},
		{"ended by the user is not followed", []store.Session{{ID: "a", EndReason: store.EndUser, EndedAt: ended},
			live("b", "a")}, "a", "", store.ErrEnded},
		{"stale newest branch falls back to a live older one", []store.Session{rotated("root", ""),
			live("old-live", "root"), {ID: "new-dead", ParentID: "root", EndReason: "stale", EndedAt: ended}},
			"root", "old-live", nil},
		{"newest live child wins", []store.Session{rotated("root", ""), live("first", "root"), live("second", "root")},
			"root", "second", nil},
		{"unknown id", nil, "nope", "", store.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := store.ResolveTip(t.Context(), newMem(tt.sessions...), tt.from)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("ResolveTip = %v, %v; want an error wrapping %v", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ResolveTip: %v", err)
			}
			if got.ID != tt.want || !got.Live() {
				t.Fatalf("tip = %s (live %v), want live %s", got.ID, got.Live(), tt.want)
			}
		})
	}
}

func TestResolveTipCycle(t *testing.T) {
	// Corrupt lineage: a -> b -> c -> a, all rotated.
	m := newMem(rotated("a", "c"), rotated("b", "a"), rotated("c", "b"))
	_, err := store.ResolveTip(t.Context(), m, "a")
	if !errors.Is(err, store.ErrEnded) {
		t.Fatalf("ResolveTip on a cycle = %v, want an error wrapping ErrEnded", err)
	}
	if m.calls > 3 {
		t.Fatalf("walked the cycle %d times, want each session once", m.calls)
	}
}

func TestResolveTipLongChainIsBounded(t *testing.T) {
	var chain []store.Session
	parent := ""
	for i := range 1500 {
		id := fmt.Sprint("s", i)
		chain = append(chain, rotated(id, parent))
		parent = id
	}
	chain = append(chain, live("tip", parent))
	m := newMem(chain...)
	_, err := store.ResolveTip(t.Context(), m, "s0")
	if !errors.Is(err, store.ErrEnded) {
		t.Fatalf("ResolveTip over 1500 hops = %v, want a bounded failure wrapping ErrEnded", err)
	}
	if m.calls > 1001 {
		t.Fatalf("walked %d sessions, want at most ~1000", m.calls)
	}
	// A chain within the bound resolves.
	got, err := store.ResolveTip(t.Context(), m, "s1000")
	if err != nil || got.ID != "tip" {
		t.Fatalf("ResolveTip from s1000 = %v, %v", got, err)
	}
}

func TestResolveTipHonoursContext(t *testing.T) {
	m := newMem(rotated("root", ""), live("tip", "root"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := store.ResolveTip(ctx, m, "root"); !errors.Is(err, context.Canceled) {
		t.Fatalf("ResolveTip with a cancelled context = %v", err)
	}
}

// Lineage is the chain ResolveTip walks, with the ancestors in front: the
// walk down takes the same path to the tip, so `sessions show` names the
// session turns run in.
func TestLineage(t *testing.T) {
	sub := func(id, parent string) store.Session {
		return store.Session{ID: id, ParentID: parent, Kind: store.SessionSubagent}
	}
	tests := []struct {
		name     string
		sessions []store.Session
		from     string
		want     []string
		wantErr  error
	}{
		{"live session alone", []store.Session{live("a", "")}, "a", []string{"a"}, nil},
		{"from the middle", []store.Session{rotated("root", ""), rotated("mid", "root"), live("tip", "mid")},
			"mid", []string{"root", "mid", "tip"}, nil},
		{"from the tip", []store.Session{rotated("root", ""), rotated("mid", "root"), live("tip", "mid")},
			"tip", []string{"root", "mid", "tip"}, nil},
		{"stale newest branch: the path to the live one", []store.Session{rotated("root", ""),
			live("old-live", "root"), {ID: "new-dead", ParentID: "root", EndReason: "stale", EndedAt: ended}},
			"root", []string{"root", "old-live"}, nil},
		{"no live tip: down the newest branch", []store.Session{rotated("root", ""), rotated("old", "root"),
			{ID: "new", ParentID: "root", EndReason: store.EndUser, EndedAt: ended}},
			"root", []string{"root", "new"}, store.ErrEnded},
		{"a subagent's parent spawned it, it does not continue it", []store.Session{rotated("p", ""),
			live("p2", "p"), sub("s", "p")}, "s", []string{"s"}, nil},
		{"a subagent child is not a continuation", []store.Session{rotated("root", ""), live("tip", "root"),
			sub("s", "root")}, "root", []string{"root", "tip"}, nil},
		{"missing parent: as far as it got", []store.Session{live("orphan", "gone")}, "orphan",
			[]string{"orphan"}, store.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMem(tt.sessions...)
			sess, err := m.GetSession(t.Context(), tt.from)
			if err != nil {
				t.Fatal(err)
			}
			chain, err := store.Lineage(t.Context(), m, sess)
			if (tt.wantErr == nil) != (err == nil) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			var got []string
			for _, s := range chain {
				got = append(got, s.ID)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("lineage %v, want %v", got, tt.want)
			}
		})
	}
}

func (m *memSessions) SessionModels(context.Context, []string) (map[string][]store.ModelUse, error) {
	return nil, nil
}
