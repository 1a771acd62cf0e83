package anthropic

import (
	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/toolcache"
	"github.com/talaria-agent/talaria/llm/internal/wire"
	"github.com/talaria-agent/talaria/llm/internal/wiresize"
)

// encodeIncremental is buildRequestBody for a request that carries a wire
// cache, byte for byte (the tests compare the two call by call): the wire
// messages of the leading messages the cache holds are reused, only the
// rest are built and encoded. The tool list comes from tc, validated and
// encoded once while it does not change.
//
// Where the cut may fall: a run of user and tool messages merges into one
// wire turn until the next assistant message, and the cache marks go on
// the last block of the newest two user turns, so they move on every call
// that adds a turn. The cached prefix therefore ends where the
// second-to-last non-empty user run of the stable prefix starts (right
// after an assistant message): the runs from there on are in every later
// request sharing that prefix, so no mark can ever fall before it, and
// thinking (decided on the last two wire messages) only looks after it.
// It returns the cache key to Release the body under once it is sent.
func encodeIncremental(req *llm.Request, defaultMaxTokens, thinkingBudget int, tc *toolCaches) ([]byte, string, error) {
	if req == nil {
		body, err := buildRequestBody(req, defaultMaxTokens, thinkingBudget)
		return body, "", err
	}
	tools, err := tc.encoded(req.Tools, req.PromptCache, req.CacheTTL)
	if err != nil {
		return nil, "", err
	}
	stable := turnCut(req.Messages, min(req.Stable, len(req.Messages)))
	suffix := buildMessages(req.Messages[stable:])
	// The envelope is built without the tools (their cache mark does not
	// move the others': at most one tool and one system mark, and two on
	// messages, never reach maxBreakpoints) and the cached list is spliced
	// in after the messages, where the struct order puts it.
	envReq := *req
	envReq.Tools = nil
	w, err := buildWire(&envReq, suffix, defaultMaxTokens, thinkingBudget)
	if err != nil {
		return nil, "", err
	}
	w.Messages = []*wireMessage{}
	envelope, err := encodeWire(w)
	if err != nil {
		return nil, "", err
	}
	head, tail, ok := wire.SplitEnvelope(envelope, `"messages":[]`, tools)
	if !ok {
		body, err := buildRequestBody(req, defaultMaxTokens, thinkingBudget)
		return body, "", err
	}
	const key = "anthropic"
	hint := func(from int) int { return wiresize.Messages(req.Messages[from:]) + len(tail) }
	var body []byte
	cut := wire.Cut{}
	if stable == 0 {
		// No cut: the whole body, not cached.
		body = append(wire.Grow(nil, len(head)+hint(0)), head...)
	} else {
		body, cut = req.Wire.Begin(key, head, stable, hint)
	}
	items := cut.Items
	var item []byte // one message's JSON, reused
	add := func(msgs []*wireMessage) error {
		for _, m := range msgs {
			var err error
			if item, err = appendMessage(item[:0], m); err != nil {
				return err
			}
			body = wire.AppendItem(body, item, items, len(tail))
			items++
		}
		return nil
	}
	// cut.Msgs is a cut of an earlier call: a run starts there too, so
	// the messages up to this call's cut build on their own.
	if err := add(buildMessages(req.Messages[cut.Msgs:stable])); err != nil {
		return nil, "", err
	}
	prefixEnd, prefixItems := len(body), items
	if err := add(suffix); err != nil {
		return nil, "", err
	}
	body = append(wire.Grow(body, len(tail)), tail...)
	if stable == 0 {
		return body, "", nil
	}
	req.Wire.Commit(key, body, len(head), prefixEnd, wire.Cut{Msgs: stable, Items: prefixItems})
	return body, key, nil
}

// toolCaches are a provider's encoded tool lists: without the prompt-cache
// mark on the last tool, with it at the default tier, with it at "1h".
type toolCaches [3]toolcache.Cache

// encoded returns the tools member of the body (`,"tools":[…]`, nothing
// for no tools), validated and encoded once while the list is unchanged.
func (tc *toolCaches) encoded(specs []llm.ToolSpec, mark bool, ttl string) ([]byte, error) {
	var c *toolcache.Cache
	if tc != nil {
		c = &tc[0]
		switch {
		case mark && ttl == TTL1h:
			c = &tc[2]
		case mark:
			c = &tc[1]
		}
	}
	return c.Encoded(specs, func(specs []llm.ToolSpec) ([]byte, error) {
		if len(specs) == 0 {
			return nil, nil
		}
		tools := make([]*wireTool, 0, len(specs))
		for _, t := range specs {
			tool, err := buildTool(t)
			if err != nil {
				return nil, err
			}
			tools = append(tools, tool)
		}
		if mark {
			tools[len(tools)-1].markCache(ttl)
		}
		b, err := encodeWire(tools)
		if err != nil {
			return nil, err
		}
		return append([]byte(`,"tools":`), b...), nil
	})
}

// turnCut is where the second-to-last user run with any content starts in
// msgs[:stable] (just after an assistant message), or 0 when there is no
// such run.
func turnCut(msgs []llm.Message, stable int) int {
	runs, content := 0, false
	for i := stable - 1; i >= 0; i-- {
		switch m := &msgs[i]; m.Role {
		case llm.RoleAssistant:
			if content {
				if runs++; runs == 2 {
					return i + 1
				}
			}
			content = false
		case llm.RoleTool:
			content = true
		case llm.RoleUser:
			content = content || len(contentBlocks(m.Content)) > 0
		}
	}
	return 0
}
