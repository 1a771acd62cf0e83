// Package wire holds what the adapters share to encode request bodies:
// JSON encoding without HTML escapes, and the per-session cache of encoded
// message prefixes that lets a call encode only what is new.
package wire

import (
	"bytes"
	"context"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
)

// Cache keeps, per wire format, the last request body of one session
// and how many of its leading messages (see Request.Stable) it encodes, so
// the next call appends only what is new: in place, in the same buffer,
// once the transport has finished with the last body, or else after one
// copy of the prefix. A call's work is then what was added, not the
// history. It is safe for concurrent use; the zero value is ready.
//
// Adapters key their entries by everything besides the messages that
// changes how a message encodes (format, system prompt, replay options),
// and record only bytes that do not depend on what follows them (no cache
// marker, no merge with a later message).
type Cache struct {
	mu      sync.Mutex
	entries map[string]*wireEntry
}

type wireEntry struct {
	body []byte // the last body built from this entry
	// head is body's start up to the message array's first item; the
	// items of the first cut.Msgs messages follow it, up to prefixEnd.
	head      int
	prefixEnd int
	cut       Cut
	// free says the transport finished with body: the next call may write
	// over everything after prefixEnd.
	free bool
}

// Cut says how much of a body a cache entry covers: the first Msgs
// messages of the request, encoded to Items wire items.
type Cut struct {
	Msgs, Items int
}

// Reset drops every entry: the messages it encoded may no longer be the
// request's first ones (the projected prefix started over).
func (c *Cache) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = nil
}

// Begin returns the start of the next body for key: head followed by the
// cached items of at most stable messages (cut says how many, and how many
// items; zero when none could be reused), to which the adapter appends
// the remaining items and the envelope's tail. The returned slice may be
// the cached body's own buffer, which the entry then no longer offers to
// anyone else until Commit. head is the envelope up to and including the
// message array's opening bracket.
func (c *Cache) Begin(key string, head []byte, stable int, sizeHint func(from int) int) ([]byte, Cut) {
	// A fresh body gets what the hint says and no more: the hint already
	// over-estimates (escapes), and at 50,000 messages an eighth more
	// would be 3-4 MB the first call never touches.
	fresh := func() []byte { return append(make([]byte, 0, len(head)+sizeHint(0)), head...) }
	if c == nil {
		return fresh(), Cut{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[key]
	if e == nil || e.cut.Msgs > stable || e.cut.Msgs == 0 || !bytes.Equal(e.body[:e.head], head) {
		return fresh(), Cut{}
	}
	prefix := e.body[e.head:e.prefixEnd]
	if e.free {
		e.free = false // ours until Commit
		return e.body[:e.prefixEnd], e.cut
	}
	// The transport may still be reading the last body: copy, with room
	// to grow so the copies stay rare.
	dst := Grow(nil, len(head)+len(prefix)+sizeHint(e.cut.Msgs))
	return append(append(dst, head...), prefix...), e.cut
}

// Commit records body as key's entry: its first headLen bytes are the
// head, then the items of cut.Msgs messages up to prefixEnd. The cache
// shares body; the caller must not modify it, and calls Release once the
// transport has read all of it.
func (c *Cache) Commit(key string, body []byte, headLen, prefixEnd int, cut Cut) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cut.Msgs == 0 {
		delete(c.entries, key)
		return
	}
	if c.entries == nil {
		c.entries = map[string]*wireEntry{}
	}
	c.entries[key] = &wireEntry{body: body, head: headLen, prefixEnd: prefixEnd, cut: cut}
}

// Release says the transport will not read body again (it wrote the whole
// request), so the next call may append in place.
func (c *Cache) Release(key string, body []byte) {
	if c == nil || len(body) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[key]; e != nil && len(e.body) == len(body) && &e.body[0] == &body[0] {
		e.free = true
	}
}

// ReleaseAfterWrite returns ctx traced so that release, called once the
// call is over, hands body back to the cache (Release) only if the
// transport wrote all of it: it may read a body after the answer has come,
// when the server answered before reading it all. An empty key (a body the
// cache did not record) releases nothing.
func (c *Cache) ReleaseAfterWrite(ctx context.Context, key string, body []byte) (_ context.Context, release func()) {
	if c == nil || key == "" {
		return ctx, func() {}
	}
	var wrote atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		wrote.Store(i.Err == nil)
	}})
	return ctx, func() {
		if wrote.Load() {
			c.Release(key, body)
		}
	}
}

// SplitEnvelope splits a request body encoded with an empty message array
// at key (`"messages":[]`: its first occurrence, which no encoded string
// can contain, since a string's quotes are escaped) into the part up to
// and including '[' and the rest, with tools (the encoded tool list member,
// which the envelope was encoded without, or nothing) spliced in after the
// array's ']', where the struct order puts it; false when there is no such
// key.
func SplitEnvelope(envelope []byte, key string, tools []byte) (head, tail []byte, ok bool) {
	at := bytes.Index(envelope, []byte(key))
	if at < 0 {
		return nil, nil, false
	}
	head, rest := envelope[:at+len(key)-1], envelope[at+len(key)-1:]
	tail = make([]byte, 0, len(rest)+len(tools))
	tail = append(append(append(tail, rest[0]), tools...), rest[1:]...) // rest[0] is the array's ']'
	return head, tail, true
}

// AppendItem appends item to body as item number n (from 0) of the message
// array, after a comma unless it is the first, leaving room for reserve
// more bytes (the envelope's tail) so the last append does not copy.
func AppendItem(body, item []byte, n, reserve int) []byte {
	body = Grow(body, len(item)+1+reserve)
	if n > 0 {
		body = append(body, ',')
	}
	return append(body, item...)
}

// Grow returns b with room for n more bytes. When it must reallocate it
// leaves an eighth of the new size free besides, so that a body appended
// to call after call in place is copied only once per eighth it grows,
// while a body built once stays close to its size (the peak memory of a
// long session's first call is about one body, not two).
func Grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	size := len(b) + n
	nb := make([]byte, len(b), size+size/8+512)
	copy(nb, b)
	return nb
}
