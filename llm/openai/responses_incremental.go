package openai

import (
	"bytes"
	"strconv"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/toolcache"
	"github.com/talaria-agent/talaria/llm/internal/wire"
	"github.com/talaria-agent/talaria/llm/internal/wiresize"
)

// encodeResponsesIncremental is encodeResponsesRequest for a request that
// carries a wire cache, byte for byte (the tests compare the two call by
// call), on the Chat Completions pattern (encodeIncremental): the input
// items of the leading messages the cache holds are reused, the rest are
// encoded and the tool list comes from tc.
//
// Where the cut may fall: a message's items depend on whether it follows
// the last user message (reasoning replay) and on the latest compaction
// checkpoint. With replay on, the cached prefix ends at the last user
// message inside the stable prefix: every message up to it encodes without
// reasoning on this call and on every later one (a later last user message
// can only be further on). The checkpoint's index is part of the cache key
// and its item part of the compared head, so a new checkpoint starts over.
// It returns the cache key to Release the body under once it is sent.
func encodeResponsesIncremental(req *llm.Request, o responsesOptions, tc *toolcache.Cache) ([]byte, string, error) {
	encode := func(r llm.Request) ([]byte, error) { return encodeResponsesRequest(&r, o) }
	head, tail, whole, err := splitRequest(req, `"input":[]`, false, encode, tc, responsesTool)
	if err != nil || whole != nil {
		return whole, "", err
	}

	var enc wire.JSONEncoder
	var scratch []byte // one item's JSON, reused
	encodeItem := func(v any) ([]byte, error) {
		var err error
		scratch, err = appendItem(scratch[:0], v, &enc)
		return scratch, err
	}

	stable := min(req.Stable, len(req.Messages))
	boundary, start, headItems := -1, 0, 0
	if o.replay {
		for i, m := range req.Messages {
			if m.Role == llm.RoleUser {
				boundary = i
			}
		}
		cutUser := -1
		for i := range stable {
			if req.Messages[i].Role == llm.RoleUser {
				cutUser = i
			}
		}
		stable = cutUser + 1
		if at, cp := latestCheckpoint(req.Messages, req.Model); at >= 0 {
			item, err := encodeItem(cp)
			if err != nil {
				return nil, "", err
			}
			head = append(bytes.Clone(head), item...)
			start, headItems = at, 1
		}
	}
	key := "responses\x00" + strconv.FormatBool(o.replay) + "\x00" + strconv.Itoa(start)
	hint := func(from int) int { return wiresize.Messages(req.Messages[from:]) + len(tail) }
	body, cut := req.Wire.Begin(key, head, stable, hint)
	items := cut.Items
	if cut.Msgs == 0 {
		items = headItems
	}
	var list []any
	prefixEnd, prefixItems := len(body), items
	for i := cut.Msgs; i < len(req.Messages); i++ {
		m := req.Messages[i]
		if i >= start || m.Role == llm.RoleSystem {
			list = appendRsItems(list[:0], m, o.replay && i > boundary, req.Model)
			for _, v := range list {
				item, err := encodeItem(v)
				if err != nil {
					return nil, "", err
				}
				body = wire.AppendItem(body, item, items, len(tail))
				items++
			}
		}
		if i+1 == stable {
			prefixEnd, prefixItems = len(body), items
		}
	}
	body = append(wire.Grow(body, len(tail)), tail...)
	req.Wire.Commit(key, body, len(head), prefixEnd, wire.Cut{Msgs: max(stable, cut.Msgs), Items: prefixItems})
	return body, key, nil
}
