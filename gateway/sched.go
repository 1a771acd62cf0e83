package gateway

import "sync"

// scheduler hands out turn slots: at most total turns run at once, at most
// limit(p) of principal p's, and when slots are short the waiting
// principals take turns (round robin), so one principal at its limit or
// with a long queue never delays another's turn.
type scheduler struct {
	mu      sync.Mutex
	total   int
	running int
	limit   func(principal string) int
	per     map[string]*schedPrincipal
	// ring lists the principals with waiters, in the order they are
	// served; next is where the round robin resumes.
	ring []string
	next int
}

type schedPrincipal struct {
	running int
	waiters []chan struct{}
}

func newScheduler(total int, limit func(string) int) *scheduler {
	return &scheduler{total: total, limit: limit, per: map[string]*schedPrincipal{}}
}

func (s *scheduler) principal(p string) *schedPrincipal { return entry(s.per, p) }

// acquire waits for a slot for principal p; false when stop closed first
// (no slot is held then).
func (s *scheduler) acquire(p string, stop <-chan struct{}) bool {
	s.mu.Lock()
	sp := s.principal(p)
	if len(sp.waiters) == 0 && s.running < s.total && sp.running < s.limit(p) {
		s.running++
		sp.running++
		s.mu.Unlock()
		return true
	}
	ch := make(chan struct{})
	if len(sp.waiters) == 0 {
		s.ring = append(s.ring, p)
	}
	sp.waiters = append(sp.waiters, ch)
	s.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-stop:
		s.mu.Lock()
		defer s.mu.Unlock()
		select {
		case <-ch:
			// Granted meanwhile: hand it back.
			s.releaseLocked(p)
			return false
		default:
		}
		for i, w := range sp.waiters {
			if w == ch {
				sp.waiters = append(sp.waiters[:i], sp.waiters[i+1:]...)
				break
			}
		}
		if len(sp.waiters) == 0 {
			s.dropRing(p)
		}
		return false
	}
}

// release gives back one of principal p's slots.
func (s *scheduler) release(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked(p)
}

func (s *scheduler) releaseLocked(p string) {
	sp := s.principal(p)
	s.running--
	sp.running--
	if sp.running == 0 && len(sp.waiters) == 0 {
		delete(s.per, p)
	}
	s.dispatch()
}

// dispatch grants free slots to waiters, one principal after another.
func (s *scheduler) dispatch() {
	for s.running < s.total && len(s.ring) > 0 {
		granted := false
		for range len(s.ring) {
			if s.next >= len(s.ring) {
				s.next = 0
			}
			p := s.ring[s.next]
			sp := s.per[p]
			if sp.running >= s.limit(p) {
				s.next++
				continue
			}
			ch := sp.waiters[0]
			sp.waiters = sp.waiters[1:]
			s.running++
			sp.running++
			close(ch)
			granted = true
			if len(sp.waiters) == 0 {
				s.ring = append(s.ring[:s.next], s.ring[s.next+1:]...)
			} else {
				s.next++
			}
			break
		}
		if !granted {
			return // every waiting principal is at its own limit
		}
	}
}

func (s *scheduler) dropRing(p string) {
	for i, q := range s.ring {
		if q == p {
			s.ring = append(s.ring[:i], s.ring[i+1:]...)
			if s.next > i {
				s.next--
			}
			return
		}
	}
}
