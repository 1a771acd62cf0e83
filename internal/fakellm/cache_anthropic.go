package fakellm

import (
	"encoding/json"
	"fmt"
)

// anCacheMarks reads every cache_control of a Messages request in the order
// the API processes blocks (tools, system, messages) and checks them as the
// real API does: type "ephemeral", ttl absent, "5m" or "1h", at most four,
// and no 1-hour mark after a 5-minute one. It returns the marks' ttls ("5m"
// for an absent ttl) and the first rule broken ("" for none).
func anCacheMarks(body []byte) (ttls []string, broken string) {
	type mark struct {
		CacheControl *struct {
			Type string  `json:"type"`
			TTL  *string `json:"ttl"`
		} `json:"cache_control"`
	}
	var b struct {
		Tools    []mark          `json:"tools"`
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &b) != nil {
		return nil, "" // the body's own checks report it
	}
	marks := b.Tools
	blocks := func(raw json.RawMessage) {
		var list []mark
		if json.Unmarshal(raw, &list) == nil {
			marks = append(marks, list...)
		}
	}
	blocks(b.System)
	for _, m := range b.Messages {
		blocks(m.Content)
	}
	seen5m := false
	for _, m := range marks {
		cc := m.CacheControl
		if cc == nil {
			continue
		}
		ttl := "5m"
		if cc.TTL != nil {
			ttl = *cc.TTL
		}
		ttls = append(ttls, ttl)
		switch {
		case broken != "":
		case cc.Type != "ephemeral":
			broken = "cache_control.type: Input should be 'ephemeral'"
		case ttl != "5m" && ttl != "1h":
			broken = "cache_control.ttl: Input should be '5m' or '1h'"
		case ttl == "1h" && seen5m:
			broken = "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. " +
				"Note that blocks are processed in the following order: `tools`, `system`, `messages`."
		}
		seen5m = seen5m || ttl == "5m"
	}
	if len(ttls) > 4 && broken == "" {
		broken = fmt.Sprintf("A maximum of 4 blocks with cache_control may be provided. Found %d.", len(ttls))
	}
	return ttls, broken
}
