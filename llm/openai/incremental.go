package openai

import (
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/toolcache"
	"github.com/talaria-agent/talaria/llm/internal/wire"
	"github.com/talaria-agent/talaria/llm/internal/wiresize"
)

// encodeIncremental is encodeRequest for a request that carries a wire
// cache: the items of the leading messages the cache holds are reused
// (in place when the transport is done with the last body), only the rest
// are encoded, and the result is byte for byte what encodeRequest returns
// (the tests compare the two call by call). Chat Completions encodes every
// message on its own, so every message boundary is a cut point. It
// returns the cache key to Release the body under once it is sent.
//
// The tool list comes from tc (validated and encoded once while it does
// not change); the envelope is encoded without it and the list spliced in
// after the messages, where the struct order puts it.
func encodeIncremental(req *llm.Request, maxCompletionTokens bool, tc *toolcache.Cache) ([]byte, string, error) {
	tools, err := encodedTools(tc, req.Tools, chatTool)
	if err != nil {
		return nil, "", err
	}
	envReq := *req
	envReq.System, envReq.Messages, envReq.Tools = "", nil, nil
	envelope, err := encodeRequest(&envReq, maxCompletionTokens)
	if err != nil {
		return nil, "", err
	}
	head, rest, ok := wire.SplitEnvelope(envelope, `"messages":[]`)
	if !ok {
		body, err := encodeRequest(req, maxCompletionTokens)
		return body, "", err
	}
	tail := make([]byte, 0, len(rest)+len(tools))
	tail = append(append(append(tail, rest[0]), tools...), rest[1:]...) // rest[0] is the array's ']'
	key := "chat\x00" + req.System
	stable := min(req.Stable, len(req.Messages))
	// The system prompt is the first message item.
	hint := func(from int) int { return len(req.System) + wiresize.Messages(req.Messages[from:]) + len(tail) }
	body, cut := req.Wire.Begin(key, head, stable, hint)
	items := cut.Items
	var item []byte // one message's JSON, reused
	add := func(w wireMessage) error {
		var err error
		if item, err = w.appendJSON(item[:0]); err != nil {
			return err
		}
		body = wire.AppendItem(body, item, items, len(tail))
		items++
		return nil
	}
	if cut.Msgs == 0 && req.System != "" {
		if err := add(wireMessage{Role: "system", Content: req.System}); err != nil {
			return nil, "", err
		}
	}
	prefixEnd, prefixItems := len(body), items
	for i := cut.Msgs; i < len(req.Messages); i++ {
		if err := add(encodeMessage(req.Messages[i])); err != nil {
			return nil, "", err
		}
		if i+1 == stable {
			prefixEnd, prefixItems = len(body), items
		}
	}
	body = append(wire.Grow(body, len(tail)), tail...)
	req.Wire.Commit(key, body, len(head), prefixEnd, wire.Cut{Msgs: max(stable, cut.Msgs), Items: prefixItems})
	return body, key, nil
}
