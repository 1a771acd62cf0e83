package transcript

import (
	"slices"
	"strconv"

	"github.com/talaria-agent/talaria/llm"
)

// idAllocator keeps tool-call ids unique across a sequence. Providers (and
// local servers that number calls call_0, call_1 … per response) repeat ids;
// the wire formats need each id to name one call.
type idAllocator struct {
	seen map[string]struct{} // ids handed out so far
	// all holds every id of the input, so a new name never collides with a
	// call that comes later; built on the first conflict only.
	all    map[string]struct{}
	suffix map[string]int // next suffix to try per base id
	next   int            // counter for ids given to id-less calls
	// priorSeen and priorAll are seen and all of the messages before msgs
	// when a Projector repairs only the part of a transcript after a
	// prefix it repaired earlier (read-only here; nil for Repair).
	priorSeen, priorAll map[string]struct{}
}

// unique returns calls with every id made unique, the same slice when no id
// changed, and how many were duplicates and how many were empty.
func (a *idAllocator) unique(msgs []llm.Message, calls []llm.ToolCall) (out []llm.ToolCall, dup, empty int) {
	if len(calls) == 0 {
		return calls, 0, 0
	}
	if a.seen == nil {
		a.seen = make(map[string]struct{}, 64)
	}
	out = calls
	cloned := false
	for j, c := range calls {
		id := c.ID
		_, used := a.seen[id]
		if !used {
			_, used = a.priorSeen[id]
		}
		if id == "" || used {
			a.loadAll(msgs)
			if id == "" {
				empty++
			} else {
				dup++
			}
			id = a.fresh(id)
			if !cloned {
				out, cloned = slices.Clone(calls), true
			}
			out[j].ID = id
		}
		a.seen[id] = struct{}{}
	}
	return out, dup, empty
}

func (a *idAllocator) loadAll(msgs []llm.Message) {
	if a.all != nil {
		return
	}
	a.all = make(map[string]struct{})
	a.suffix = make(map[string]int)
	for i := range msgs {
		for _, c := range msgs[i].ToolCalls {
			a.all[c.ID] = struct{}{}
		}
	}
}

func (a *idAllocator) taken(id string) bool {
	for _, m := range []map[string]struct{}{a.seen, a.all, a.priorSeen, a.priorAll} {
		if _, ok := m[id]; ok {
			return true
		}
	}
	return false
}

// fresh returns an unused id derived from base: base_2, base_3 …, or call_N
// when base is empty.
func (a *idAllocator) fresh(base string) string {
	if base == "" {
		for {
			a.next++
			if id := "call_" + strconv.Itoa(a.next); !a.taken(id) {
				return id
			}
		}
	}
	k := max(a.suffix[base], 2)
	for ; ; k++ {
		if id := base + "_" + strconv.Itoa(k); !a.taken(id) {
			a.suffix[base] = k + 1
			return id
		}
	}
}
