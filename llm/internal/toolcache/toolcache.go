// Package toolcache keeps an adapter's encoded tool list between calls.
package toolcache

import (
	"bytes"
	"sync"

	"github.com/talaria-agent/talaria/llm"
)

// Cache keeps an adapter's encoded tool list (validated, compacted,
// in the adapter's wire format) of the last request, so a provider checks
// and encodes each tool schema once, not on every call: the list only
// changes when the registry does. One cache serves one encoding; the zero
// value is ready and it is safe for concurrent use.
type Cache struct {
	mu    sync.Mutex
	set   bool
	specs []llm.ToolSpec // a private copy of the list encoded
	enc   []byte
}

// Encoded returns build(specs), calling build only when specs differ from
// the list of the last successful call. The bytes are shared with every
// later caller and must not be modified. A nil cache builds every time.
func (c *Cache) Encoded(specs []llm.ToolSpec, build func([]llm.ToolSpec) ([]byte, error)) ([]byte, error) {
	if c == nil {
		return build(specs)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set && sameSpecs(c.specs, specs) {
		return c.enc, nil
	}
	enc, err := build(specs)
	if err != nil {
		return nil, err
	}
	c.specs = make([]llm.ToolSpec, len(specs))
	for i, t := range specs {
		c.specs[i] = llm.ToolSpec{Name: t.Name, Description: t.Description, Parameters: bytes.Clone(t.Parameters)}
	}
	c.enc, c.set = enc, true
	return enc, nil
}

func sameSpecs(a, b []llm.ToolSpec) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description || !bytes.Equal(a[i].Parameters, b[i].Parameters) {
			return false
		}
	}
	return true
}
