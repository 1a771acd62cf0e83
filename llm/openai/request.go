package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/talaria-agent/talaria/llm"
	"github.com/talaria-agent/talaria/llm/internal/wire"
)

// wireRequest is the Chat Completions request body. encoding/json writes
// struct fields in declaration order, which is what makes the bytes stable.
type wireRequest struct {
	Model               string        `json:"model"`
	Messages            []wireMessage `json:"messages"`
	Tools               []wireTool    `json:"tools,omitempty"`
	MaxTokens           int           `json:"max_tokens,omitempty"`
	MaxCompletionTokens int           `json:"max_completion_tokens,omitempty"`
	Temperature         *float64      `json:"temperature,omitempty"`
	Stream              bool          `json:"stream"`
	StreamOptions       streamOptions `json:"stream_options"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// wireMessage is one chat message. Content is a string, nil (JSON null: an
// assistant turn that only calls tools) or []wirePart (multimodal user turn).
type wireMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wirePart struct {
	Type     string        `json:"type"`
	Text     string        `json:"text,omitempty"`
	ImageURL *wireImageURL `json:"image_url,omitempty"`
}

type wireImageURL struct {
	URL string `json:"url"`
}

type wireToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function wireFunctionCall `json:"function"`
}

type wireFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// emptySchema stands in for a tool without a parameter schema: some
// compatible servers reject a function without "parameters".
const emptySchema = `{"type":"object","properties":{}}`

// encodeRequest turns req into the request body. It is deterministic: the
// same Request always yields the same bytes.
func encodeRequest(req *llm.Request, maxCompletionTokens bool) ([]byte, error) {
	w := wireRequest{
		Model:         req.Model,
		Messages:      make([]wireMessage, 0, len(req.Messages)+1),
		Temperature:   req.Temperature,
		Stream:        true,
		StreamOptions: streamOptions{IncludeUsage: true},
	}
	if req.System != "" {
		w.Messages = append(w.Messages, wireMessage{Role: "system", Content: req.System})
	}
	for _, m := range req.Messages {
		w.Messages = append(w.Messages, encodeMessage(m))
	}
	for _, t := range req.Tools {
		params, err := toolParams(t)
		if err != nil {
			return nil, err
		}
		w.Tools = append(w.Tools, wireTool{
			Type:     "function",
			Function: wireFunction{Name: t.Name, Description: t.Description, Parameters: params},
		})
	}
	if req.MaxTokens > 0 {
		if maxCompletionTokens {
			w.MaxCompletionTokens = req.MaxTokens
		} else {
			w.MaxTokens = req.MaxTokens
		}
	}
	return encodeBody(w)
}

// encodeBody encodes a whole request body.
func encodeBody(w any) ([]byte, error) {
	b, err := wire.MarshalJSON(w)
	if err != nil {
		return nil, fmt.Errorf("encoding request: %w", err)
	}
	return b, nil
}

// toolParams is a tool's parameter schema as sent: the empty schema when it
// has none, an error when it is not JSON.
func toolParams(t llm.ToolSpec) (json.RawMessage, error) {
	if len(bytes.TrimSpace(t.Parameters)) == 0 {
		return json.RawMessage(emptySchema), nil
	}
	if !json.Valid(t.Parameters) {
		return nil, fmt.Errorf("tool %q: parameters are not valid JSON", t.Name)
	}
	return t.Parameters, nil
}

func encodeMessage(m llm.Message) wireMessage {
	switch m.Role {
	case llm.RoleUser:
		return wireMessage{Role: "user", Content: userContent(m.Content,
			func(t string) (wirePart, bool) { return wirePart{Type: "text", Text: t}, t != "" },
			func(u string) wirePart { return wirePart{Type: "image_url", ImageURL: &wireImageURL{URL: u}} })}
	case llm.RoleAssistant:
		// Reasoning is deliberately dropped: Chat Completions has no field
		// for it, and sending it in a vendor field would vary by server.
		w := wireMessage{Role: "assistant"}
		text := m.Text()
		switch {
		case text != "":
			w.Content = text
		case len(m.ToolCalls) > 0:
			w.Content = nil // null, not "": some routes reject empty text blocks
		default:
			w.Content = ""
		}
		for _, c := range m.ToolCalls {
			w.ToolCalls = append(w.ToolCalls, wireToolCall{
				ID:       c.ID,
				Type:     "function",
				Function: wireFunctionCall{Name: c.Name, Arguments: wireArguments(c.Arguments)},
			})
		}
		return w
	case llm.RoleTool:
		// Tool messages carry text only; IsError is not marked on the wire
		// because the result text already says what failed.
		return wireMessage{Role: "tool", Content: m.Text(), ToolCallID: m.ToolCallID}
	default:
		return wireMessage{Role: string(m.Role), Content: m.Text()}
	}
}

// wireArguments replays the model's argument text verbatim. Only an empty
// text becomes "{}", because servers that parse replayed arguments as JSON
// (vLLM's chat templates) fail on "".
func wireArguments(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	return s
}

// userContent sends plain text as a string, which every compatible server
// accepts, and switches to content parts only when images are present.
// Both APIs use it with their own part type: text makes a text part (false
// drops it), image one of an image's URL.
func userContent[P any](parts []llm.Part, text func(string) (P, bool), image func(url string) P) any {
	m := llm.Message{Content: parts}
	if !m.HasImages() {
		return m.Text()
	}
	out := make([]P, 0, len(parts))
	for _, p := range parts {
		switch p.Type {
		case llm.PartText:
			if w, ok := text(p.Text); ok {
				out = append(out, w)
			}
		case llm.PartImage:
			if u := imageURL(p); u != "" {
				out = append(out, image(u))
			}
		}
	}
	return out
}

// imageURL returns the part's URL, or its bytes as a data URL.
func imageURL(p llm.Part) string {
	if len(p.Data) == 0 {
		return p.URL
	}
	mt := p.MediaType
	if mt == "" {
		mt = http.DetectContentType(p.Data)
	}
	return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(p.Data)
}
