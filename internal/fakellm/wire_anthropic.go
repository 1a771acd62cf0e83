package fakellm

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// anthropicWire renders Messages API replies.
type anthropicWire struct{}

type anUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreation            *struct {
		Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation,omitempty"`
	OutputTokens int64 `json:"output_tokens"`
}

type anReplyMsg struct {
	ID           string   `json:"id"`
	Type         string   `json:"type"`
	Role         string   `json:"role"`
	Model        string   `json:"model"`
	Content      []anOut  `json:"content"`
	StopReason   *string  `json:"stop_reason"`
	StopSequence *string  `json:"stop_sequence"`
	Usage        *anUsage `json:"usage,omitempty"`
}

// anOut is one content block of a reply; the pointer fields are present
// only for the block types that carry them.
type anOut struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

type anDelta struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
	Thinking    *string `json:"thinking,omitempty"`
	Signature   *string `json:"signature,omitempty"`
}

func (anthropicWire) requestIDHeader() string { return "request-id" }

func (anthropicWire) errorJSON(e *ErrorReply, requestID string) []byte {
	return mustJSON(struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}{Type: "error", Error: struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}{cmp.Or(e.Type, "api_error"), e.Message}, RequestID: requestID})
}

func (w anthropicWire) errorEvent(e *ErrorReply, requestID string) []byte {
	return sseEvent("error", errorBody(w, e, requestID))
}

// anStop maps a neutral finish to a stop_reason.
func anStop(neutral string) string {
	switch neutral {
	case "stop":
		return "end_turn"
	case "tool_calls":
		return "tool_use"
	case "length":
		return "max_tokens"
	case "content_filter":
		return "refusal"
	default:
		return neutral
	}
}

func anUsageOf(u *Usage) *anUsage {
	if u == nil {
		return nil
	}
	a := &anUsage{InputTokens: u.Input, CacheCreationInputTokens: u.CacheWrite, CacheReadInputTokens: u.CacheRead, OutputTokens: u.Output}
	if u.CacheWrite1h > 0 {
		a.CacheCreation = &struct {
			Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
			Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
		}{u.CacheWrite - u.CacheWrite1h, u.CacheWrite1h}
	}
	return a
}

// anInput is a call's arguments as the "input" object. The wire cannot
// carry invalid JSON in a complete message, so such text is sent as a JSON
// string: the client still sees something that is not an object.
func anInput(args string) json.RawMessage {
	s := strings.TrimSpace(args)
	switch {
	case s == "":
		return json.RawMessage("{}")
	case json.Valid([]byte(s)):
		return json.RawMessage(s)
	default:
		return mustJSON(args)
	}
}

// anSignature is an opaque, stable thinking signature for message id that
// covers the thinking text: a replay with edited text no longer verifies,
// as with the real API.
func anSignature(id, thinking string) string {
	return base64.StdEncoding.EncodeToString([]byte(sigPrefix + id + ":" + textDigest(thinking)))
}

const sigPrefix = "fakellm-thinking-signature:"

// textDigest is a short, stable digest of s.
func textDigest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:12])
}

// anVerifySignature reports whether sig was issued by anSignature for
// exactly this thinking text.
func anVerifySignature(sig, thinking string) bool {
	raw, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || !strings.HasPrefix(string(raw), sigPrefix) {
		return false
	}
	i := strings.LastIndexByte(string(raw), ':')
	return i >= 0 && string(raw[i+1:]) == textDigest(thinking)
}

func (anthropicWire) message(r *reply) []byte {
	stop := anStop(r.finish)
	m := anReplyMsg{ID: r.id, Type: "message", Role: "assistant", Model: r.model, Content: []anOut{}, StopReason: &stop, Usage: anUsageOf(r.usage)}
	if r.reasoning != "" {
		thinking, sig := r.reasoning, anSignature(r.id, r.reasoning)
		m.Content = append(m.Content, anOut{Type: "thinking", Thinking: &thinking, Signature: &sig})
	}
	if r.text != "" {
		text := r.text
		m.Content = append(m.Content, anOut{Type: "text", Text: &text})
	}
	for _, c := range r.calls {
		m.Content = append(m.Content, anOut{Type: "tool_use", ID: c.ID, Name: c.Name, Input: anInput(c.Arguments)})
	}
	return mustJSON(m)
}

func (anthropicWire) events(r *reply) (events [][]byte, cut int) {
	add := func(name string, v any) { events = append(events, sseEvent(name, mustJSON(v))) }
	type blockStart struct {
		Type         string `json:"type"`
		Index        int    `json:"index"`
		ContentBlock anOut  `json:"content_block"`
	}
	type blockDelta struct {
		Type  string  `json:"type"`
		Index int     `json:"index"`
		Delta anDelta `json:"delta"`
	}
	type blockStop struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	}

	start := anReplyMsg{ID: r.id, Type: "message", Role: "assistant", Model: r.model, Content: []anOut{}}
	if u := anUsageOf(r.usage); u != nil {
		// message_start carries the input side; the output count so far is
		// at most one token, the final one comes in message_delta.
		u.OutputTokens = min(u.OutputTokens, 1)
		start.Usage = u
	}
	add("message_start", struct {
		Type    string     `json:"type"`
		Message anReplyMsg `json:"message"`
	}{"message_start", start})
	add("ping", struct {
		Type string `json:"type"`
	}{"ping"})

	index := 0
	lastStop := -1
	stopBlock := func() {
		lastStop = len(events)
		add("content_block_stop", blockStop{"content_block_stop", index})
		index++
	}
	if r.reasoning != "" {
		empty, sig := "", anSignature(r.id, r.reasoning)
		add("content_block_start", blockStart{"content_block_start", index, anOut{Type: "thinking", Thinking: &empty, Signature: &empty}})
		for _, p := range split(r.reasoning, textChunkBytes) {
			add("content_block_delta", blockDelta{"content_block_delta", index, anDelta{Type: "thinking_delta", Thinking: &p}})
		}
		add("content_block_delta", blockDelta{"content_block_delta", index, anDelta{Type: "signature_delta", Signature: &sig}})
		stopBlock()
	}
	if r.text != "" {
		empty := ""
		add("content_block_start", blockStart{"content_block_start", index, anOut{Type: "text", Text: &empty}})
		for _, p := range split(r.text, textChunkBytes) {
			add("content_block_delta", blockDelta{"content_block_delta", index, anDelta{Type: "text_delta", Text: &p}})
		}
		stopBlock()
	}
	for _, c := range r.calls {
		add("content_block_start", blockStart{"content_block_start", index, anOut{Type: "tool_use", ID: c.ID, Name: c.Name, Input: json.RawMessage("{}")}})
		for _, frag := range split(c.Arguments, argsChunkBytes) {
			add("content_block_delta", blockDelta{"content_block_delta", index, anDelta{Type: "input_json_delta", PartialJSON: &frag}})
		}
		stopBlock()
	}
	// A cut stream stops inside its last block, the way a real one breaks.
	cut = len(events)
	if lastStop >= 0 {
		cut = lastStop
	}

	stop := anStop(r.finish)
	delta := struct {
		Type  string `json:"type"`
		Delta struct {
			StopReason   *string `json:"stop_reason"`
			StopSequence *string `json:"stop_sequence"`
		} `json:"delta"`
		Usage *struct {
			OutputTokens int64 `json:"output_tokens"`
		} `json:"usage,omitempty"`
	}{Type: "message_delta"}
	delta.Delta.StopReason = &stop
	if r.usage != nil {
		delta.Usage = &struct {
			OutputTokens int64 `json:"output_tokens"`
		}{r.usage.Output}
	}
	add("message_delta", delta)
	add("message_stop", struct {
		Type string `json:"type"`
	}{"message_stop"})
	return events, cut
}

// sseEvent frames one named server-sent event.
func sseEvent(name string, payload []byte) []byte {
	return append([]byte("event: "+name+"\n"), sseData(payload)...)
}
