package toolcache

import (
	"bytes"
	"errors"
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

// The list is built once while it does not change (the same bytes, no
// allocation), again when any field of any tool changes, and a failed
// build is not remembered.
func TestToolCacheBuildsOncePerList(t *testing.T) {
	builds := 0
	build := func(specs []llm.ToolSpec) ([]byte, error) {
		builds++
		var b []byte
		for _, s := range specs {
			if string(s.Parameters) == "bad" {
				return nil, errors.New("bad schema")
			}
			b = append(append(append(b, s.Name...), s.Description...), s.Parameters...)
		}
		return b, nil
	}
	specs := []llm.ToolSpec{{Name: "a", Description: "d", Parameters: []byte(`{"type":"object"}`)}, {Name: "b"}}
	var c Cache
	first, err := c.Encoded(specs, build)
	if err != nil {
		t.Fatal(err)
	}
	// A caller changing its own slice afterwards must not change the cache.
	same := []llm.ToolSpec{{Name: "a", Description: "d", Parameters: []byte(`{"type":"object"}`)}, {Name: "b"}}
	specs[0].Parameters[1] = 'X'
	again, _ := c.Encoded(same, build)
	if builds != 1 || &again[0] != &first[0] {
		t.Fatalf("same list built %d times", builds)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = c.Encoded(same, build) }); n != 0 {
		t.Errorf("a cached list costs %v allocations", n)
	}
	for _, tc := range []struct {
		name  string
		specs []llm.ToolSpec
	}{
		{"description", []llm.ToolSpec{{Name: "a", Description: "e", Parameters: []byte(`{"type":"object"}`)}, {Name: "b"}}},
		{"parameters", []llm.ToolSpec{{Name: "a", Description: "e", Parameters: []byte(`{"type":"array"}`)}, {Name: "b"}}},
		{"name", []llm.ToolSpec{{Name: "a", Description: "e", Parameters: []byte(`{"type":"array"}`)}, {Name: "c"}}},
		{"fewer", []llm.ToolSpec{{Name: "a", Description: "e", Parameters: []byte(`{"type":"array"}`)}}},
		{"none", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := builds
			got, err := c.Encoded(tc.specs, build)
			want, _ := build(tc.specs)
			if err != nil || !bytes.Equal(got, want) || builds != before+2 {
				t.Fatalf("got %q (%v), want %q; built %d times", got, err, want, builds-before-1)
			}
		})
	}
	if _, err := c.Encoded([]llm.ToolSpec{{Name: "x", Parameters: []byte("bad")}}, build); err == nil {
		t.Fatal("a failed build was not reported")
	}
	if _, err := c.Encoded([]llm.ToolSpec{{Name: "x", Parameters: []byte("bad")}}, build); err == nil {
		t.Fatal("a failed build was remembered as a success")
	}
}
