package turn

import (
	"encoding/json"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/transcript"
)

// assemble builds the request: the session's stored system prompt, the
// projected history and the tools. Its bytes depend only on the durable
// rows, so consecutive requests share a byte prefix and the provider's
// prompt cache stays warm. The request is cleaned here, the chokepoint
// every text leaf passes on its way to a provider.
//
// Only what was added since the last call is projected and cleaned (the
// turn's Projector keeps the rest), and the adapter encodes only that (the
// request carries the turn's wire cache); the bytes are the same as a full
// projection's. A shape repair (stripping images or reasoning) takes the
// full path.
func (e *Engine) assemble(st *state) {
	var msgs []llm.Message
	var rep transcript.Report
	stable := 0
	if st.stripped["images"] || st.stripped["reasoning"] {
		st.proj.Reset()
		msgs, rep = transcript.Project(st.rows)
	} else {
		msgs, stable, rep = st.proj.Project(st.rows)
	}
	if s := st.proj.Starts(); s != st.wireStarts {
		// The prefix started over: the cached bytes may be other rows'.
		st.wire.Reset()
		st.wireStarts = s
	}
	if rep.Changed() {
		e.log.Debug("transcript repaired for the wire", "session", st.sessionID(), "repairs", rep.String())
	}
	if st.stripped["images"] {
		msgs = stripImages(msgs)
	}
	if st.stripped["reasoning"] {
		msgs = stripReasoning(msgs)
	}
	req := &llm.Request{
		Model:       e.route(st).Model,
		System:      st.live.session.SystemPrompt,
		Messages:    msgs,
		Tools:       e.toolSpecs(st),
		PromptCache: e.cfg.PromptCache,
		Stable:      stable,
		Wire:        &st.wire,
		Session:     st.sessionID(),
	}
	if st.stripped["patterns"] {
		req.Tools = stripPatterns(req.Tools)
	}
	transcript.CleanRequestFrom(req, stable)
	st.req = req
}

// stripImages replaces image parts with a short text, for providers that
// rejected them (too large, corrupt, or not allowed in tool results).
func stripImages(msgs []llm.Message) []llm.Message {
	return edited(msgs, func(m *llm.Message) {
		if !m.HasImages() {
			return
		}
		parts := make([]llm.Part, 0, len(m.Content))
		for _, p := range m.Content {
			if p.Type == llm.PartImage {
				p = llm.TextPart("[image removed: the provider could not accept it]")
			}
			parts = append(parts, p)
		}
		m.Content = parts
	})
}

// stripReasoning drops replayed thinking, for providers that rejected its
// signature or encrypted content.
func stripReasoning(msgs []llm.Message) []llm.Message {
	return edited(msgs, func(m *llm.Message) { m.Reasoning = nil })
}

// stripPatterns removes "pattern" keywords from tool schemas, which
// llama.cpp's grammar compiler cannot always handle.
func stripPatterns(specs []llm.ToolSpec) []llm.ToolSpec {
	return edited(specs, func(s *llm.ToolSpec) {
		var v any
		if json.Unmarshal(s.Parameters, &v) != nil {
			return
		}
		if b, err := json.Marshal(dropKey(v, "pattern")); err == nil {
			s.Parameters = b
		}
	})
}

// edited returns a copy of s with edit applied to each element, leaving s
// as it was (the projector's messages, the engine's tool list).
func edited[T any](s []T, edit func(*T)) []T {
	out := make([]T, len(s))
	copy(out, s)
	for i := range out {
		edit(&out[i])
	}
	return out
}

func dropKey(v any, key string) any {
	switch t := v.(type) {
	case map[string]any:
		// Only the keyword (a string), not a property that happens to be
		// named like it (search_files has a "pattern" argument).
		if _, isKeyword := t[key].(string); isKeyword {
			delete(t, key)
		}
		for k, c := range t {
			t[k] = dropKey(c, key)
		}
	case []any:
		for i, c := range t {
			t[i] = dropKey(c, key)
		}
	}
	return v
}
