package sqlite

import (
	"encoding/json"
	"fmt"

	"github.com/talaria-agent/talaria/llm"
)

// Content is stored compactly: the common case, exactly one plain non-empty
// text part, lives only in the text column (content NULL), which spares a
// JSON round trip on almost every row of a long transcript. No parts is NULL
// with empty text; everything else (images, several parts, an empty text
// part) is the JSON of the parts.

// encodeContent returns the content column value and the plain text.
func encodeContent(parts []llm.Part) (content any, text string, err error) {
	text = llm.Message{Content: parts}.Text()
	if len(parts) == 0 || (len(parts) == 1 && plainText(parts[0])) {
		return nil, text, nil
	}
	b, err := json.Marshal(parts)
	if err != nil {
		return nil, "", fmt.Errorf("encode content: %w", err)
	}
	return string(b), text, nil
}

func plainText(p llm.Part) bool {
	return p.Type == llm.PartText && p.Text != "" && p.MediaType == "" && p.Data == nil && p.URL == ""
}

// decodeContent reverses encodeContent.
func decodeContent(content []byte, valid bool, text string) ([]llm.Part, error) {
	if !valid {
		if text == "" {
			return nil, nil
		}
		return []llm.Part{llm.TextPart(text)}, nil
	}
	var parts []llm.Part
	if err := json.Unmarshal(content, &parts); err != nil {
		return nil, fmt.Errorf("decode content: %w", err)
	}
	return parts, nil
}

// encodeJSON returns NULL for a nil/empty value, the JSON text otherwise.
func encodeToolCalls(calls []llm.ToolCall) (any, error) {
	if len(calls) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(calls)
	if err != nil {
		return nil, fmt.Errorf("encode tool calls: %w", err)
	}
	return string(b), nil
}

func encodeReasoning(r *llm.Reasoning) (any, error) {
	if r == nil {
		return nil, nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode reasoning: %w", err)
	}
	return string(b), nil
}
