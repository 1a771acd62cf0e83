package openai

import (
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/toolcache"
	"github.com/talaria-agent/talaria/llm/internal/wire"
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
	hint := func(from int) int { return sizeHint(req, from) + len(tail) }
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

// sizeHint is about the encoded size of the system prompt and the
// messages from index from on: their text, arguments and images plus a
// fixed allowance for the JSON around them. It only sizes buffers.
func sizeHint(req *llm.Request, from int) int {
	n := len(req.System) + 64
	for i := from; i < len(req.Messages); i++ {
		m := &req.Messages[i]
		n += 96 + len(m.ToolCallID)
		for _, p := range m.Content {
			n += len(p.Text) + len(p.URL) + len(p.Data)*4/3 + 48
		}
		for _, c := range m.ToolCalls {
			n += len(c.ID) + len(c.Name) + len(c.Arguments) + 64
		}
	}
	return n + n/16 // escapes
}
