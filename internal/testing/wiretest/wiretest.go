// Package wiretest checks an adapter's incremental request encoder against
// its full encoder, call by call, the way the transport uses the bodies.
package wiretest

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	"github.com/talaria-agent/talaria/llm"
)

// Calls follows the bodies of one session's calls made with Cache.
type Calls struct {
	Cache   *llm.WireCache
	InPlace int // calls whose body was the previous one's buffer, appended in place
	prev    []byte
	held    [][2][]byte
}

// Check fails t unless got (the incremental encoder's body of call, cached
// under key) is want (the full encoder's) byte for byte. Every third body
// is held as if the transport were still reading it, the others are
// released; a held body must never be written over by a later call.
func (c *Calls) Check(t testing.TB, call int, got, want []byte, key string) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("call %d: bytes differ\n got  %s\n want %s", call, got, want)
	}
	if c.prev != nil && len(got) > 0 && &got[0] == &c.prev[0] {
		c.InPlace++
	}
	c.prev = got
	if call%3 == 2 {
		c.held = append(c.held, [2][]byte{got, bytes.Clone(got)})
	} else {
		c.Cache.Release(key, got)
	}
	for _, h := range c.held {
		if !bytes.Equal(h[0], h[1]) {
			t.Fatalf("call %d: a body the transport had not finished was written over", call)
		}
	}
}

// CheckJSONFields fails t for each struct type whose JSON tags, in field
// order, are not the ones given: a hand-written encoder of the type writes
// exactly those, so a field added or removed must change it too.
func CheckJSONFields(t testing.TB, want map[reflect.Type][]string) {
	t.Helper()
	for typ, tags := range want {
		var got []string
		for f := range typ.Fields() {
			got = append(got, f.Tag.Get("json"))
		}
		if !slices.Equal(got, tags) {
			t.Errorf("%s has JSON fields %q; its hand-written encoder writes %q", typ, got, tags)
		}
	}
}
