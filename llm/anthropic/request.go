package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/wire"
)

// ErrInvalidRequest marks a request the adapter could not encode (nil
// request, invalid tool schema JSON). It is wrapped in the *llm.APIError's
// Err; retrying the same request cannot help.
var ErrInvalidRequest = errors.New("invalid request")

// emptySchema stands in for a tool without parameters: the API requires an
// input_schema object.
const emptySchema = `{"type":"object","properties":{}}`

// buildRequestBody encodes req as a streaming Messages request. It is a pure
// function of its inputs: the same request always yields the same bytes.
//
// thinkingBudget > 0 asks for extended thinking (see applyThinking).
func buildRequestBody(req *llm.Request, defaultMaxTokens, thinkingBudget int) ([]byte, error) {
	if req == nil {
		return nil, fmt.Errorf("%w: nil request", ErrInvalidRequest)
	}
	w, err := buildWire(req, buildMessages(req.Messages), defaultMaxTokens, thinkingBudget)
	if err != nil {
		return nil, err
	}
	return encodeWire(w)
}

// buildWire is the request body for req with msgs as its wire messages
// (all of them, or the last ones from a turn boundary on, see
// encodeIncremental): thinking and cache marks are placed on msgs.
func buildWire(req *llm.Request, msgs []*wireMessage, defaultMaxTokens, thinkingBudget int) (*wireRequest, error) {
	w := &wireRequest{
		Model:       req.Model,
		MaxTokens:   req.MaxTokens,
		Temperature: req.Temperature,
		Stream:      true,
	}
	if w.MaxTokens <= 0 {
		w.MaxTokens = defaultMaxTokens
		if thinkingBudget > 0 {
			// The budget is part of max_tokens; the default leaves the
			// answer its usual room on top of it.
			w.MaxTokens += thinkingBudget
		}
	}
	if req.System != "" {
		w.System = append(w.System, newText(req.System))
	}
	for _, m := range req.Messages {
		// The Messages API has no system role inside messages; such entries
		// join the top-level system after Request.System, in order.
		if m.Role == llm.RoleSystem {
			if t := m.Text(); t != "" {
				w.System = append(w.System, newText(t))
			}
		}
	}
	w.Messages = msgs
	for _, t := range req.Tools {
		tool, err := buildTool(t)
		if err != nil {
			return nil, err
		}
		w.Tools = append(w.Tools, tool)
	}
	if err := applyThinking(w, thinkingBudget); err != nil {
		return nil, err
	}
	if req.PromptCache {
		if !ValidCacheTTL(req.CacheTTL) {
			return nil, fmt.Errorf("%w: cache ttl %q: use 5m or 1h", ErrInvalidRequest, req.CacheTTL)
		}
		placeCacheBreakpoints(w, req.CacheTTL)
	}
	return w, nil
}

// encodeWire is the JSON of a request body or of one wire message.
func encodeWire(w any) ([]byte, error) {
	b, err := wire.MarshalJSON(w)
	if err != nil {
		return nil, fmt.Errorf("%w: encoding: %w", ErrInvalidRequest, err)
	}
	return b, nil
}

func buildTool(t llm.ToolSpec) (*wireTool, error) {
	schema := json.RawMessage(bytes.TrimSpace(t.Parameters))
	switch {
	case len(schema) == 0 || string(schema) == "null":
		schema = json.RawMessage(emptySchema)
	case !json.Valid(schema):
		return nil, fmt.Errorf("%w: tool %q: input schema is not valid JSON", ErrInvalidRequest, t.Name)
	}
	return &wireTool{Name: t.Name, Description: t.Description, InputSchema: schema}, nil
}

// buildMessages maps the conversation onto alternating wire turns.
//
// Every run of consecutive user and tool messages becomes ONE user turn whose
// content is all tool_result blocks first (in order), then the other blocks
// (in order): the API wants tool results to open the user turn, and a user
// text that follows tool results (a steer, a nudge) rides in that same turn.
// Messages that map to no content at all are dropped, since the API rejects
// empty content.
func buildMessages(msgs []llm.Message) []*wireMessage {
	var out []*wireMessage
	var results, others []block
	flushUser := func() {
		if len(results)+len(others) > 0 {
			content := make([]block, 0, len(results)+len(others))
			content = append(append(content, results...), others...)
			out = append(out, &wireMessage{Role: "user", Content: content})
		}
		results, others = nil, nil
	}
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleUser:
			others = append(others, contentBlocks(m.Content)...)
		case llm.RoleTool:
			results = append(results, toolResult(m))
		case llm.RoleAssistant:
			flushUser()
			if content := assistantBlocks(m); len(content) > 0 {
				out = append(out, &wireMessage{Role: "assistant", Content: content})
			}
		}
	}
	flushUser()
	return out
}

// assistantBlocks replays an assistant turn: thinking first, then text,
// then tool calls. Thinking is replayed only when Anthropic issued it and it
// carries a signature (the API rejects unsigned thinking, and another
// format's reasoning is unreadable here); every stored block goes back
// exactly as received, in order, because the signature covers its bytes.
func assistantBlocks(m llm.Message) []block {
	var content []block
	if r := m.Reasoning; r != nil && r.IssuedBy(apiName, "") && len(r.Blocks) > 0 {
		for _, b := range r.Blocks {
			switch b.Type {
			case "thinking":
				if b.Signature != "" {
					content = append(content, &thinkingBlock{Type: "thinking", Thinking: b.Thinking, Signature: b.Signature})
				}
			case "redacted_thinking":
				if b.Data != "" {
					content = append(content, &redactedThinkingBlock{Type: "redacted_thinking", Data: b.Data})
				}
			}
		}
	} else if r != nil && r.IssuedBy(apiName, "") {
		if r.Signature != "" {
			content = append(content, &thinkingBlock{Type: "thinking", Thinking: r.Text, Signature: r.Signature})
		}
		if r.Redacted != "" {
			content = append(content, &redactedThinkingBlock{Type: "redacted_thinking", Data: r.Redacted})
		}
	}
	if t := m.Text(); t != "" {
		content = append(content, newText(t))
	}
	for _, c := range m.ToolCalls {
		content = append(content, &toolUseBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: c.ArgumentsJSON()})
	}
	return content
}

func toolResult(m llm.Message) block {
	b := &toolResultBlock{Type: "tool_result", ToolUseID: m.ToolCallID, IsError: m.IsError}
	if m.HasImages() {
		if blocks := contentBlocks(m.Content); len(blocks) > 0 {
			b.Content = blocks
		}
	} else if t := m.Text(); t != "" {
		b.Content = t
	}
	return b
}

// contentBlocks maps user content parts; empty text and image parts with
// neither data nor URL are skipped (the API rejects empty text blocks).
func contentBlocks(parts []llm.Part) []block {
	var out []block
	for _, p := range parts {
		switch p.Type {
		case llm.PartText:
			if p.Text != "" {
				out = append(out, newText(p.Text))
			}
		case llm.PartImage:
			if img := imageFor(p); img != nil {
				out = append(out, img)
			}
		}
	}
	return out
}

func imageFor(p llm.Part) *imageBlock {
	switch {
	case len(p.Data) > 0:
		mt := p.MediaType
		if mt == "" {
			// The API requires media_type; sniffing is deterministic.
			mt = http.DetectContentType(p.Data)
		}
		return &imageBlock{Type: "image", Source: imageSource{
			Type:      "base64",
			MediaType: mt,
			Data:      base64.StdEncoding.EncodeToString(p.Data),
		}}
	case strings.TrimSpace(p.URL) != "":
		return &imageBlock{Type: "image", Source: imageSource{Type: "url", URL: p.URL}}
	}
	return nil
}

func newText(s string) *textBlock { return &textBlock{Type: "text", Text: s} }
