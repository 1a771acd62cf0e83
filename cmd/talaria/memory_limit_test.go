package main

import "testing"

// Only the one-session commands follow the live heap with the memory
// limit; serve and the rest keep GOGC's pacing, and a user's GOMEMLIMIT
// or GOGC wins.
func TestTrackMemory(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			if len(kv) == 2 && kv[0] == k {
				return kv[1]
			}
			return ""
		}
	}
	tests := []struct {
		args  []string
		env   func(string) string
		track bool
	}{
		{[]string{"run", "-c", "go on"}, env(), true},
		{[]string{"chat"}, env(), true},
		{[]string{"serve"}, env(), false},
		{[]string{"sessions", "list"}, env(), false},
		{nil, env(), false},
		{[]string{"run", "x"}, env("GOMEMLIMIT", "2GiB"), false},
		{[]string{"chat"}, env("GOGC", "200"), false},
	}
	for _, tt := range tests {
		tr := trackMemory(tt.args, tt.env)
		if got := tr != nil; got != tt.track {
			t.Errorf("trackMemory(%q): tracking %v, want %v", tt.args, got, tt.track)
		}
		tr.Stop()
	}
}
