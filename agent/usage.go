package agent

import (
	"context"
	"fmt"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/store"
)

// Spend sums the usage of some sessions.
type Spend struct {
	Sessions int       `json:"sessions"`
	Usage    llm.Usage `json:"usage"`
	CostUSD  float64   `json:"cost_usd"`
	APICalls int64     `json:"api_calls"`
}

func (s *Spend) add(x *store.Session) {
	s.Sessions++
	s.Usage.Add(x.Usage)
	s.CostUSD += x.CostUSD
	s.APICalls += x.APICalls
}

// SessionSpend is a session's own spend, its subagents' (their own
// children included) and its background reviews', kept apart: the own
// figures are what the session's context saw; the others never count
// toward it.
type SessionSpend struct {
	Own       Spend `json:"own"`
	Subagents Spend `json:"subagents"`
	Review    Spend `json:"review"`
}

// Total is everything the session cost, children and reviews included.
func (s SessionSpend) Total() Spend {
	t := s.Own
	for _, x := range []Spend{s.Subagents, s.Review} {
		t.Sessions += x.Sessions
		t.Usage.Add(x.Usage)
		t.CostUSD += x.CostUSD
		t.APICalls += x.APICalls
	}
	return t
}

// maxTreeSessions bounds the walk over a session's children.
const maxTreeSessions = 10000

// SpendOf computes a session's spend from the store.
func SpendOf(ctx context.Context, st store.Sessions, id string) (SessionSpend, error) {
	var out SessionSpend
	s, err := st.GetSession(ctx, id)
	if err != nil {
		return out, err
	}
	out.Own.add(s)
	seen := map[string]bool{id: true}
	// into says where a child's spend goes: its kind at the first level,
	// the first level's bucket below it.
	type item struct {
		id   string
		into *Spend
	}
	queue := []item{{id: id}}
	for len(queue) > 0 {
		if len(seen) > maxTreeSessions {
			return out, fmt.Errorf("session %s has more than %d child sessions", id, maxTreeSessions)
		}
		cur := queue[0]
		queue = queue[1:]
		kids, err := st.ChildSessions(ctx, cur.id)
		if err != nil {
			return out, err
		}
		for i := range kids {
			k := &kids[i]
			if seen[k.ID] {
				continue
			}
			seen[k.ID] = true
			into := cur.into
			if into == nil {
				switch k.Kind {
				case store.SessionSubagent:
					into = &out.Subagents
				case store.SessionReview:
					into = &out.Review
				default:
					continue // a compression continuation: its own session
				}
			}
			into.add(k)
			queue = append(queue, item{id: k.ID, into: into})
		}
	}
	return out, nil
}
