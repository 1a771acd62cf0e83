package gateway

import "testing"

// TestSchedulerFair: a principal at its own limit never holds back
// another's turn, and free slots go round robin among the waiting
// principals.
func TestSchedulerFair(t *testing.T) {
	limits := map[string]int{"alice": 2, "bob": 2, "carol": 2}
	s := newScheduler(3, func(p string) int { return limits[p] })
	stop := make(chan struct{})
	for range 2 {
		if !s.acquire("alice", stop) {
			t.Fatal("alice's first turns must start")
		}
	}
	// Alice is at her limit: her third waits though a slot is free...
	third := make(chan bool, 1)
	go func() { third <- s.acquire("alice", stop) }()
	for {
		s.mu.Lock()
		n := len(s.ring)
		s.mu.Unlock()
		if n == 1 {
			break
		}
	}
	// ...and bob takes it at once.
	if !s.acquire("bob", stop) {
		t.Fatal("bob's turn must start")
	}
	select {
	case <-third:
		t.Fatal("alice's third turn started over her limit")
	default:
	}
	// The server is full; carol waits too. Bob's freed slot goes to
	// carol (alice is still at her own limit); alice's freed one to her
	// third turn.
	carol := make(chan bool, 1)
	go func() { carol <- s.acquire("carol", stop) }()
	for {
		s.mu.Lock()
		n := len(s.ring)
		s.mu.Unlock()
		if n == 2 {
			break
		}
	}
	s.release("bob")
	if !<-carol {
		t.Fatal("carol's turn must start")
	}
	select {
	case <-third:
		t.Fatal("alice's third started while she runs two")
	default:
	}
	s.release("alice")
	if !<-third {
		t.Fatal("alice's third turn must start once one of hers ends")
	}
	// A waiter that gives up holds nothing.
	gone := make(chan bool, 1)
	go func() { gone <- s.acquire("bob", stop) }()
	close(stop)
	if <-gone {
		s.release("bob")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running != 3 {
		t.Fatalf("running %d, want 3", s.running)
	}
}
