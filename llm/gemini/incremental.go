package gemini

import (
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/toolcache"
	"github.com/talaria-agent/talaria/llm/internal/wire"
	"github.com/talaria-agent/talaria/llm/internal/wiresize"
)

// encodeIncremental is encodeRequest for a request that carries a wire
// cache, byte for byte (the tests compare the two call by call, and the
// full encoder with the genai SDK's body): the contents of the leading
// messages the cache holds are reused, only the rest are built and
// encoded. It returns the cache key to Release the body under once it is
// sent ("" when nothing was cached).
//
// Where the cut may fall: a run of user and tool messages merges into one
// user content until the next assistant message, so the cached prefix
// ends where the last assistant message of the stable prefix starts; the
// contents before it are complete and the same in every later request
// sharing that prefix. "contents" is the body's first member and nothing
// in a content depends on what follows it, so the rest of the body (the
// generation config, system instruction and tools) is the tail, built on
// every call.
func encodeIncremental(req *llm.Request, budget int, tc *toolcache.Cache) ([]byte, string, error) {
	tail, err := encodeTail(req, budget, tc)
	if err != nil {
		return nil, "", err
	}
	stable := modelCut(req.Messages, min(req.Stable, len(req.Messages)))
	// The model decides which stored signatures are replayed.
	key := "gemini\x00" + req.Model
	hint := func(from int) int { return wiresize.Messages(req.Messages[from:]) + len(tail) }
	var body []byte
	var cut wire.Cut
	if stable == 0 {
		body = append(wire.Grow(nil, len(contentsKey)+hint(0)), contentsKey...)
	} else {
		body, cut = req.Wire.Begin(key, []byte(contentsKey), stable, hint)
	}
	w := contentWriter{body: body, items: cut.Items, reserve: len(tail)}
	if err := buildContents(req.Messages, cut.Msgs, stable, req.Model, w.add); err != nil {
		return nil, "", err
	}
	prefixEnd, prefixItems := len(w.body), w.items
	if err := buildContents(req.Messages, stable, len(req.Messages), req.Model, w.add); err != nil {
		return nil, "", err
	}
	if stable == 0 || w.items == 0 {
		return finishBody(w.body, w.items, tail), "", nil
	}
	body = append(wire.Grow(w.body, len(tail)), tail...)
	req.Wire.Commit(key, body, len(contentsKey), prefixEnd, wire.Cut{Msgs: stable, Items: prefixItems})
	return body, key, nil
}

// modelCut is the index of the last assistant message in msgs[:stable],
// or 0 when there is none.
func modelCut(msgs []llm.Message, stable int) int {
	for i := stable - 1; i > 0; i-- {
		if msgs[i].Role == llm.RoleAssistant {
			return i
		}
	}
	return 0
}
