package openai

import (
	"encoding/json"

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
	encode := func(r llm.Request) ([]byte, error) { return encodeRequest(&r, maxCompletionTokens) }
	head, tail, whole, err := splitRequest(req, `"messages":[]`, true, encode, tc, chatTool)
	if err != nil || whole != nil {
		return whole, "", err
	}
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

// splitRequest encodes req without its messages and tools (and without
// its system prompt when systemItem says it is an item of the array too)
// and splits that envelope around the item array at key, with the tool
// list from tc (encoded by toWire, once while it does not change) spliced
// into the tail, where the struct order puts it. When the array is not
// found it returns the full body of req as whole instead. encode takes the
// request by value: a pointer passed to a function value would move every
// envelope to the heap.
func splitRequest(req *llm.Request, key string, systemItem bool, encode func(llm.Request) ([]byte, error),
	tc *toolcache.Cache, toWire func(llm.ToolSpec, json.RawMessage) any) (head, tail, whole []byte, err error) {
	tools, err := encodedTools(tc, req.Tools, toWire)
	if err != nil {
		return nil, nil, nil, err
	}
	env := *req
	env.Messages, env.Tools = nil, nil
	if systemItem {
		env.System = ""
	}
	envelope, err := encode(env)
	if err != nil {
		return nil, nil, nil, err
	}
	head, tail, ok := wire.SplitEnvelope(envelope, key, tools)
	if !ok {
		whole, err = encode(*req)
		return nil, nil, whole, err
	}
	return head, tail, nil, nil
}
