package config

import (
	"testing"
	"time"
)

// The subagents, memory and review sections load as written; absent, the
// defaults are left to the consumers (nil enabled: on; review: off).
func TestChildSections(t *testing.T) {
	c, err := load(t, `
subagents:
  enabled: false
  max_depth: 2
  max_parallel: 3
  max_iterations: 12
memory:
  user: ann
  max_tokens: 500
review:
  enabled: true
  idle: 750ms
  max_iterations: 2
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, m, r := c.Subagents, c.Memory, c.Review
	if s.Enabled == nil || *s.Enabled || s.MaxDepth != 2 || s.MaxParallel != 3 || s.MaxIterations != 12 {
		t.Errorf("subagents %+v", s)
	}
	if m.Enabled != nil || m.User != "ann" || m.MaxTokens != 500 {
		t.Errorf("memory %+v", m)
	}
	if !r.Enabled || time.Duration(r.Idle) != 750*time.Millisecond || r.MaxIterations != 2 {
		t.Errorf("review %+v", r)
	}
	d, err := load(t, "-", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Subagents.Enabled != nil || d.Memory.Enabled != nil || d.Review.Enabled {
		t.Errorf("defaults: %+v %+v %+v", d.Subagents, d.Memory, d.Review)
	}
	if _, err := load(t, "review:\n  enabeld: true\n", nil); err == nil {
		t.Error("a misspelt review key loaded")
	}
}
